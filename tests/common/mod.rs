//! Helpers shared by the integration tests: run the command line's own path in-process.

#![allow(dead_code)]

use std::sync::Arc;

use clap::Parser;
use throng::cli::args::Command;
use throng::cli::plan::{build, RunSetup};
use throng::cli::Cli;
use throng::core::Snapshot;
use throng::http::HttpDriver;
use throng::report::RunResult;

/// Parses `throng run ARGS...` exactly as the binary would.
pub fn setup(args: &[&str]) -> RunSetup {
    let mut argv = vec!["throng", "run"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).expect("flags parse");
    let Command::Run(run) = cli.command else {
        panic!("not a run")
    };
    build(&run).expect("flags validate")
}

/// Runs `throng run ARGS...` in-process and returns the final snapshot.
pub async fn run(args: &[&str]) -> Arc<Snapshot> {
    let s = setup(args);
    let driver = Arc::new(HttpDriver::new(s.http).expect("driver"));
    throng::engine::run(s.plan, driver)
        .await
        .expect("run starts")
}

/// The JSON-result view of a snapshot.
pub fn result(s: &Snapshot) -> RunResult {
    RunResult::from_snapshot(s, std::time::SystemTime::now(), false)
}

/// Errors of a class in a snapshot.
pub fn errors_of(s: &Snapshot, class: throng::core::ErrorClass) -> u64 {
    s.errors
        .iter()
        .filter(|e| e.class == class)
        .map(|e| e.count)
        .sum()
}
