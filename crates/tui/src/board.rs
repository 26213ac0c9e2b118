//! What the dashboard shows beyond the run in focus: the grid that run is a cell of (its level
//! table filling in, the latency–throughput curve), and the workloads running beside it.
//!
//! The board is data, made by the caller (the `run` crate, which owns the grid and formats its
//! level table with the report's own code) and drawn as it is: the dashboard formats no table of
//! its own for it.

use std::sync::Arc;

use throng_core::{LoadModel, Rate, Snapshot, Users};

/// The grid and the workloads around the run in focus; empty for a single run.
#[derive(Debug, Clone, Default)]
pub struct Board {
    /// The grid the run is a cell of.
    pub grid: Option<Arc<GridBoard>>,
    /// Every workload of a mix (`--with`) with its latest snapshot, the focused one first.
    pub workloads: Vec<Workload>,
}

/// One workload of a mix.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Its name (the scenario file's stem, or `NAME=` of `--with`).
    pub name: String,
    /// Its latest snapshot.
    pub snap: Arc<Snapshot>,
}

/// A grid as it goes: where it is, its level table so far and the curve of its levels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridBoard {
    /// Where the grid is: `run 3 of 8: 2,000 users, go, round 1 of 2`.
    pub at: String,
    /// The level table, its header first: the finished rows, then the running one.
    pub table: Vec<Vec<String>>,
    /// The row of `table` (counted after the header) of the run going now.
    pub running: Option<usize>,
    /// The lines under the table: capacity, the sweep's end.
    pub notes: Vec<String>,
    /// Latency against throughput, a line per side and percentile, a point per level.
    pub curve: Vec<CurveLine>,
    /// Between two runs: the cooldown.
    pub cooling: bool,
}

/// One line of the latency–throughput curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveLine {
    /// Its name in the legend (`p99`, `p99 go`).
    pub name: String,
    /// `(requests per second, ms)`, a point per level in the order they ran.
    pub points: Vec<(f64, f64)>,
}

impl Board {
    /// Whether the board shows several workloads at once.
    pub fn is_mix(&self) -> bool {
        self.workloads.len() > 1
    }
}

/// A run's load model in a few words, live: `20 users` (as many as run now) or `50/s` (the
/// target rate now).
pub fn model(snap: &Snapshot) -> String {
    match &snap.plan.model {
        LoadModel::Closed(c) => match c.users {
            Users::Fixed(n) if snap.active == 0 => throng_core::plural(u64::from(n), "user"),
            _ => throng_core::plural(snap.active, "user"),
        },
        LoadModel::Open(o) => {
            let now = snap.series.last().map_or(0.0, |p| p.target_rate);
            let rate = match (&o.rate, now > 0.0) {
                (_, true) => now,
                (Rate::Constant(r), false) => *r,
                (Rate::Stages { start, .. }, false) => *start,
            };
            format!("{}/s", crate::format::rate(rate))
        }
    }
}
