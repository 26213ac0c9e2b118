//! Helpers shared by the engine's tests on tokio's paused clock.

#![allow(dead_code)] // each test binary uses its own share

use std::sync::Arc;

use throng_core::{ClosedLoop, Driver, ErrorClass, LoadModel, RunPlan, Snapshot};
use throng_engine::{start_with, Extras};

/// Runs `plan` with `driver` and `extras` on the caller's (paused) clock
/// (`Extras::on_caller`) and returns the final snapshot.
pub(crate) async fn on_caller<D: Driver>(
    plan: RunPlan,
    driver: Arc<D>,
    extras: Extras,
) -> Arc<Snapshot> {
    let set = tokio::task::LocalSet::new();
    set.run_until(async move {
        let extras = Extras {
            on_caller: true,
            ..extras
        };
        let handle = start_with(plan, driver, extras).await.unwrap();
        handle.wait().await
    })
    .await
}

/// Whether `v` is within `rel` of `want` (a share of it, either way).
pub(crate) fn within(v: f64, want: f64, rel: f64) -> bool {
    (v - want).abs() <= want * rel
}

/// A closed loop of `users` users, each running `iterations` iterations.
pub(crate) fn iterations(users: u32, iterations: u64) -> RunPlan {
    RunPlan::new(
        "engine",
        LoadModel::Closed(ClosedLoop::iterations(users, iterations)),
    )
}

/// The errors of `class` in a snapshot.
pub(crate) fn errors_of(s: &Snapshot, class: ErrorClass) -> u64 {
    s.errors
        .iter()
        .filter(|e| e.class == class)
        .map(|e| e.count)
        .sum()
}
