//! throng: a load tester for HTTP, gRPC and SQL endpoints whose numbers are right.
//!
//! Everything the command line does is a library call. Build a [`core::RunPlan`] (the load
//! model: when requests are due) and a [`core::Driver`] (the protocol: how they are sent), then
//! [`Run`] runs it as `throng run` does (thresholds, the JSON result and reports, containers
//! and databases watched, the dashboard or a progress line, signals, shards) and returns the
//! result and its exit code. [`engine::run`] alone returns only the final [`core::Snapshot`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use throng::core::LoadSpec;
//! use throng::http::{HttpClient, HttpConfig};
//!
//! let url = "http://127.0.0.1:8080/";
//! let driver = Arc::new(HttpClient::one_step(HttpConfig::new(url)?)?);
//! let spec = LoadSpec { users: Some(10), requests: Some(10_000), ..LoadSpec::default() };
//! let plan = spec.plan(url, &throng::core::spec::keys)?;
//! let finished = throng::Run::new(plan, driver)
//!     .thresholds(["p99<250ms".parse()?])
//!     .json("result.json")
//!     .summary(true)
//!     .execute()
//!     .await?;
//! std::process::exit(finished.exit_code().into());
//! # }
//! ```
//!
//! Features (all on by default): `cli` (the command line, and every feature below), `grpc`
//! (gRPC targets), `sql` (PostgreSQL and MySQL/MariaDB targets), `sqlite` (SQLite targets too),
//! `testbed` (the demo's and tests' targets), `dashboard` (the live terminal UI), `docker`
//! (container stats), `metrics` (live metrics for Prometheus). With `default-features = false` the library is core, engine, run, http,
//! scenario and report: no tonic, no sqlx, no SQLite.
#![deny(missing_docs)]

#[cfg(feature = "cli")]
mod cli;

/// The command line, as the `throng` binary runs it: parses the process's arguments, runs the
/// command, prints what went wrong, and returns the exit code (0 passed, 1 runtime error,
/// 2 bad input, 99 a threshold failed).
#[cfg(feature = "cli")]
pub fn command_line() -> std::process::ExitCode {
    cli::main()
}

pub use throng_core as core;
#[cfg(feature = "docker")]
pub use throng_docker as docker;
pub use throng_engine as engine;
#[cfg(feature = "grpc")]
pub use throng_grpc as grpc;
pub use throng_http as http;
#[cfg(feature = "metrics")]
pub use throng_metrics as metrics;
pub use throng_report as report;
pub use throng_run as run;
pub use throng_run::Run;
pub use throng_scenario as scenario;
#[cfg(feature = "sql")]
pub use throng_sql as sql;
#[cfg(feature = "testbed")]
pub use throng_testbed as testbed;
#[cfg(feature = "dashboard")]
pub use throng_tui as tui;

pub use throng_protocols::protocols;

/// The book's library chapters (`docs/book/src/library/`): their Rust compiles, and runs where
/// it is not marked `no_run`, as this crate's doctests, so the book cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../docs/book/src/library/depending.md")]
#[doc = include_str!("../docs/book/src/library/run.md")]
#[doc = include_str!("../docs/book/src/library/protocol.md")]
pub struct BookLibraryChapters;

/// The command line as clap types (the `throng-cli` crate): `throng run`'s flags as one
/// struct ([`flags::RunArgs`]), each protocol's among them, the flags every workload has
/// ([`flags::RunFlags`], [`flags::main`] for a workload of your own), and a scenario file's
/// run under them ([`flags::scenario`]).
#[cfg(feature = "cli")]
pub use throng_cli as flags;
