//! Grids: one plan run at several load levels (a sweep of users or rate), against several sides
//! (A/B targets), in rounds, as one result.
//!
//! The level table is what people publish: a row per level and side with the achieved
//! throughput, the latency percentiles, the error rate (without the requests cut off at the
//! end of a level, which are counted apart: 7,380 requests aborted at the end of a 10,000-user
//! level made a third of its error column) and the side's containers and database under load.
//! A row of several rounds is their exact merge: histograms added bucket by bucket, counts
//! summed, throughput over the rounds' summed time; never one round standing for the others.
//! Capacity is the highest level that met the thresholds before the first that did not.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{LabelResult, MergeError, RunResult, Threshold};

mod pivot;
mod rounds;
mod table;

pub use pivot::{Across, Column, Pivot, Unit};
pub use rounds::{merge_concurrent, merge_rounds};
use table::describe;
pub use table::{grid_csv, grid_markdown, per_round, render_grid, Shape};
pub(crate) use table::{level_table, runs_text};

/// The `kind` of a grid's JSON document.
pub const GRID_KIND: &str = "grid";

/// A load level of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// A closed loop of this many users.
    Users(u32),
    /// An open loop of this many arrivals per second.
    Rate(f64),
    /// A rung of a paired ladder (`users:rate=300:2000,500:3000`): an open loop of `rate`
    /// arrivals per second with at most `users` in flight, the two moving together as wrk2's
    /// `-c` and `-R` do in the ladders people publish.
    Paired {
        /// At most this many requests in flight (users, connections).
        users: u32,
        /// Arrivals per second.
        rate: f64,
    },
}

impl Level {
    /// The level as a number (users, or arrivals per second; a paired rung's rate, which
    /// sets its load).
    pub fn value(&self) -> f64 {
        match self {
            Level::Users(n) => f64::from(*n),
            Level::Rate(r) | Level::Paired { rate: r, .. } => *r,
        }
    }

    /// What the number counts: `users`, `rate`, or `users:rate` for a paired ladder.
    pub fn kind(&self) -> &'static str {
        match self {
            Level::Users(_) => "users",
            Level::Rate(_) => "rate",
            Level::Paired { .. } => "users:rate",
        }
    }

    /// The level's cells in a table, one per axis (`300`, `2000`), and their headers.
    pub fn cells(&self) -> Vec<String> {
        match self {
            Level::Users(n) => vec![n.to_string()],
            Level::Rate(r) => vec![r.to_string()],
            Level::Paired { users, rate } => vec![users.to_string(), rate.to_string()],
        }
    }

    /// The headers of [`Level::cells`].
    pub fn headers(&self) -> Vec<String> {
        let names: &[&str] = match self {
            Level::Users(_) => &["Users"],
            Level::Rate(_) => &["Rate (/s)"],
            Level::Paired { .. } => &["Users", "Rate (/s)"],
        };
        names.iter().map(|s| s.to_string()).collect()
    }

    /// A name for files and tags: `1000-users`, `2000-per-s`, `300-users-2000-per-s`.
    pub fn tag(&self) -> String {
        match self {
            Level::Users(n) => format!("{n}-users"),
            Level::Rate(r) => format!("{r}-per-s"),
            Level::Paired { users, rate } => format!("{users}-users-{rate}-per-s"),
        }
    }

    /// The levels of a sweep as written: `users=1000,2000,4000`, `rate=2000,3000`, or a range
    /// `users=1000..10000:1000` (from, to inclusive, step); lists and ranges mix
    /// (`users=10,50..200:50`). A paired ladder gives both axes of each rung:
    /// `users:rate=300:2000,500:3000` (or `rate:users=2000:300,...`).
    pub fn parse_sweep(text: &str) -> Result<Vec<Level>, String> {
        let (kind, values) = text.split_once('=').ok_or_else(|| {
            format!(
                "{text:?}: write users=N,N,... or rate=N,N,... (or a range users=FROM..TO:STEP, \
                 or a paired ladder users:rate=U:R,U:R,...)"
            )
        })?;
        let kind = kind.trim();
        if kind.contains(':') {
            return Self::parse_paired(text, kind, values);
        }
        if kind != "users" && kind != "rate" {
            return Err(format!(
                "{text:?}: a sweep is of `users` or `rate` (or both paired, `users:rate`), not \
                 `{kind}`"
            ));
        }
        let number = |s: &str| -> Result<f64, String> {
            let v: f64 = s
                .trim()
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{text:?}: `{}` is not a number", s.trim()))?;
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{text:?}: a level must be above 0, not {v}"));
            }
            if kind == "users" && (v.fract() != 0.0 || v > f64::from(u32::MAX)) {
                return Err(format!("{text:?}: users come in whole numbers, not {v}"));
            }
            Ok(v)
        };
        let mut out = Vec::new();
        for part in values.split(',') {
            match part.split_once("..") {
                Some((from, rest)) => {
                    let (to, step) = rest.split_once(':').ok_or_else(|| {
                        format!("{text:?}: a range is FROM..TO:STEP, e.g. users=1000..10000:1000")
                    })?;
                    let (from, to, step) = (number(from)?, number(to)?, number(step)?);
                    if to < from {
                        return Err(format!("{text:?}: the range {from}..{to} runs backwards"));
                    }
                    let n = ((to - from) / step + 1e-9).floor() as u64 + 1;
                    if n > 1000 {
                        return Err(format!("{text:?}: {n} levels; a sweep takes at most 1000"));
                    }
                    out.extend((0..n).map(|k| from + step * k as f64));
                }
                None => out.push(number(part)?),
            }
        }
        if out.is_empty() || out.len() > 1000 {
            return Err(format!("{text:?}: a sweep takes 1 to 1000 levels"));
        }
        // A level given twice would run again as a row of its own, the same load twice
        // passing for two levels of the curve.
        for (i, v) in out.iter().enumerate() {
            if out[..i].contains(v) {
                return Err(format!(
                    "{text:?}: the level {v} is given twice; each level runs once (--rounds \
                     runs every level again)"
                ));
            }
        }
        Ok(out
            .into_iter()
            .map(|v| match kind {
                "users" => Level::Users(v as u32),
                _ => Level::Rate(v),
            })
            .collect())
    }
}

impl Level {
    /// A paired ladder's rungs (`users:rate=300:2000,500:3000`): each rung's values in the
    /// order of the axes named before `=`.
    fn parse_paired(text: &str, kind: &str, values: &str) -> Result<Vec<Level>, String> {
        let axes: Vec<&str> = kind.split(':').map(str::trim).collect();
        let users_first = match axes[..] {
            ["users", "rate"] => true,
            ["rate", "users"] => false,
            _ => {
                return Err(format!(
                    "{text:?}: a paired ladder pairs `users` and `rate` (users:rate=U:R,...), \
                     not `{kind}`"
                ))
            }
        };
        let mut out = Vec::new();
        for rung in values.split(',') {
            let parts: Vec<&str> = rung.split(':').collect();
            if parts.len() != 2 {
                return Err(format!(
                    "{text:?}: the rung `{}` gives {} of the 2 values of {kind} (write e.g. \
                     {kind}={})",
                    rung.trim(),
                    parts.len(),
                    if users_first { "300:2000" } else { "2000:300" }
                ));
            }
            let (u, r) = match users_first {
                true => (parts[0], parts[1]),
                false => (parts[1], parts[0]),
            };
            let users = Self::parse_sweep(&format!("users={u}"))
                .map_err(|e| format!("{text:?}: in the rung `{}`: {e}", rung.trim()))?;
            let rate = Self::parse_sweep(&format!("rate={r}"))
                .map_err(|e| format!("{text:?}: in the rung `{}`: {e}", rung.trim()))?;
            let (Some(Level::Users(users)), Some(Level::Rate(rate)), 1, 1) =
                (users.first(), rate.first(), users.len(), rate.len())
            else {
                return Err(format!(
                    "{text:?}: the rung `{}` is one value per axis (no ranges in a paired \
                     ladder)",
                    rung.trim()
                ));
            };
            let level = Level::Paired {
                users: *users,
                rate: *rate,
            };
            if out.contains(&level) {
                return Err(format!(
                    "{text:?}: the rung {} is given twice; each level runs once (--rounds runs \
                     every level again)",
                    rung.trim()
                ));
            }
            out.push(level);
        }
        if out.len() > 1000 {
            return Err(format!("{text:?}: a sweep takes 1 to 1000 levels"));
        }
        Ok(out)
    }

    /// Two ladders given apart (`users: [10, 50]`, `rate: [100, 500]`, as a scenario file's
    /// `sweep:` does) as one paired ladder; `None` when their lengths differ.
    pub fn pair(users: &[u32], rates: &[f64]) -> Option<Vec<Level>> {
        (users.len() == rates.len()).then(|| {
            users
                .iter()
                .zip(rates)
                .map(|(&users, &rate)| Level::Paired { users, rate })
                .collect()
        })
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Level::Users(n) => write!(f, "{}", throng_core::plural(u64::from(*n), "user")),
            Level::Rate(r) => write!(f, "{r}/s"),
            Level::Paired { users, rate } => write!(
                f,
                "{} at {rate}/s",
                throng_core::plural(u64::from(*users), "user")
            ),
        }
    }
}

/// Where a run sits in its grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Coordinates {
    /// The load level, in a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// The side, in an A/B run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// The round, from 1.
    pub round: u32,
}

impl Coordinates {
    /// Said before the target in a run's header: `2,000 users, go, round 2 of 3`.
    pub fn title(&self, rounds: u32) -> String {
        let mut parts = Vec::new();
        if let Some(l) = &self.level {
            parts.push(l.to_string());
        }
        if let Some(s) = &self.side {
            parts.push(s.clone());
        }
        if rounds > 1 {
            parts.push(format!("round {} of {rounds}", self.round));
        }
        parts.join(", ")
    }
}

/// One run of a grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GridRun {
    /// Its place in the grid.
    #[serde(flatten)]
    pub at: Coordinates,
    /// Its whole result.
    pub result: RunResult,
}

/// A side's container under load, at one level (the mean over its rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LevelContainer {
    /// The container's name.
    pub name: String,
    /// Mean CPU under load, percent of one core.
    pub cpu_percent: f64,
    /// Mean memory under load, bytes.
    pub memory: u64,
}

/// One row of the level table: a level and a side, its rounds merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LevelRow {
    /// The level, in a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// The side, in an A/B run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// Rounds merged into the row.
    pub rounds: u32,
    /// The rounds' TOTAL merged (histograms added, counts summed, rates over the summed time).
    pub total: LabelResult,
    /// Failures other than requests cut off at the end of a run, percent of the samples.
    pub failed_percent: f64,
    /// Requests still in flight (or queued) when a run ended: counted apart.
    pub aborted: u64,
    /// The side's containers under load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<LevelContainer>,
    /// The databases' transactions per second under load, summed over the databases read
    /// (servers that count no transactions, such as brokers, left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_tps: Option<f64>,
    /// Whether every threshold held on the merged row (`None`: the grid has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    /// Whether this row crossed the `until` condition, ending its side's sweep.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub crossed: bool,
    /// Whether the `until` condition found nothing to measure at this level (no request
    /// succeeded, as against a refused port): the side's sweep ends as if it had crossed, and
    /// the result says that nothing could be measured rather than that it crossed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unmeasured: bool,
    /// Whether the level was cut short: a run of it stopped before its planned end (a signal,
    /// `q` on the dashboard) or a round of it never ran. Its figures are of less than the
    /// level's load, so it is never the capacity.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// The capacity of one side: the highest level that met the thresholds over its whole run,
/// before the first that did not (or was cut short).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    /// The side, in an A/B run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// The level; `None` when the first level already failed.
    pub level: Option<Level>,
    /// Its throughput there, requests per second.
    pub throughput: Option<f64>,
}

/// Every run of a grid, its level table and capacity: one JSON document (`kind: grid`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GridResult {
    /// The JSON result's version (that of [`RunResult`]).
    pub schema_version: u32,
    /// `grid`.
    pub kind: String,
    /// The throng version that ran it.
    pub throng_version: String,
    /// What ran at each level (the first run's plan, described).
    pub description: String,
    /// The pass conditions each row is judged by.
    #[serde(default)]
    pub thresholds: Vec<String>,
    /// The condition that ends a side's sweep after the first level that crosses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The level table: per level, per side, in the order they ran.
    pub rows: Vec<LevelRow>,
    /// Per side, with thresholds and levels: the highest level that met them.
    #[serde(default)]
    pub capacity: Vec<Capacity>,
    /// Whether a signal stopped the grid before its end.
    pub interrupted: bool,
    /// Every run, with its coordinates, in the order they ran.
    pub runs: Vec<GridRun>,
}

/// Failures other than the requests aborted at the end, percent of the samples.
fn failed_percent(t: &LabelResult) -> f64 {
    match t.samples {
        0 => 0.0,
        n => 100.0 * t.errors.saturating_sub(t.aborted) as f64 / n as f64,
    }
}

/// The mean of `f` over the rounds that have it.
fn mean_of(runs: &[&RunResult], f: impl Fn(&RunResult) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

impl LevelRow {
    /// The row of a hold of a staged run.
    pub fn of_hold(h: &crate::HoldResult) -> LevelRow {
        LevelRow {
            level: Some(h.level),
            side: None,
            rounds: 1,
            total: h.total.clone(),
            failed_percent: failed_percent(&h.total),
            aborted: h.total.aborted,
            containers: Vec::new(),
            db_tps: None,
            passed: None,
            crossed: false,
            unmeasured: false,
            cut: false,
        }
    }

    /// The row of one level and side from its rounds; `thresholds` judge the merged rounds.
    pub fn of(
        at: &Coordinates,
        runs: &[&RunResult],
        thresholds: &[Threshold],
    ) -> Result<(LevelRow, RunResult), MergeError> {
        let merged = merge_rounds(runs)?;
        let t = &merged.total;
        let mut containers: Vec<LevelContainer> = Vec::new();
        if let Some(first) = runs.first() {
            for c in &first.containers {
                let of = |r: &RunResult| {
                    r.containers
                        .iter()
                        .find(|x| x.name == c.name)
                        .and_then(|x| x.load.clone())
                };
                containers.push(LevelContainer {
                    name: c.name.clone(),
                    cpu_percent: mean_of(runs, |r| of(r).map(|u| u.cpu_mean)).unwrap_or(0.0),
                    memory: mean_of(runs, |r| of(r).map(|u| u.mem_mean as f64)).unwrap_or(0.0)
                        as u64,
                });
            }
        }
        let db_tps = mean_of(runs, |r| {
            let tps = r.databases.iter().filter_map(|d| d.transactions);
            let tps: Vec<f64> = tps.map(|t| t.load_per_s).collect();
            (!tps.is_empty()).then(|| tps.iter().sum())
        });
        let passed = (!thresholds.is_empty())
            .then(|| thresholds.iter().all(|th| th.evaluate(&merged).passed));
        let row = LevelRow {
            level: at.level,
            side: at.side.clone(),
            rounds: runs.len() as u32,
            total: t.clone(),
            failed_percent: failed_percent(t),
            aborted: t.aborted,
            containers,
            db_tps,
            passed,
            crossed: false,
            unmeasured: false,
            cut: runs.iter().any(|r| r.interrupted),
        };
        Ok((row, merged))
    }
}

impl GridResult {
    /// A grid's result from its runs (in the order they ran) and its level table.
    pub fn new(
        runs: Vec<GridRun>,
        rows: Vec<LevelRow>,
        thresholds: &[Threshold],
        until: Option<&Threshold>,
        interrupted: bool,
    ) -> Self {
        let description = describe(&runs, &rows);
        let mut sides: Vec<Option<String>> = Vec::new();
        for r in &rows {
            if !sides.contains(&r.side) {
                sides.push(r.side.clone());
            }
        }
        let levels = rows.iter().any(|r| r.level.is_some());
        let capacity = if thresholds.is_empty() || !levels {
            Vec::new()
        } else {
            sides
                .iter()
                .map(|side| {
                    let mine = rows.iter().filter(|r| &r.side == side);
                    // A level cut short met its thresholds over part of its load only.
                    let met: Vec<&LevelRow> = mine
                        .take_while(|r| r.passed == Some(true) && !r.cut)
                        .collect();
                    Capacity {
                        side: side.clone(),
                        level: met.last().and_then(|r| r.level),
                        throughput: met.last().map(|r| r.total.throughput),
                    }
                })
                .collect()
        };
        GridResult {
            schema_version: crate::SCHEMA_VERSION,
            kind: GRID_KIND.into(),
            throng_version: env!("CARGO_PKG_VERSION").to_string(),
            description,
            thresholds: thresholds.iter().map(|t| t.text.clone()).collect(),
            until: until.map(|t| t.text.clone()),
            rows,
            capacity,
            interrupted,
            runs,
        }
    }

    /// Whether every row met the thresholds.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.passed != Some(false))
    }

    /// The sides, in order (none for a sweep of one target).
    pub fn sides(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.rows {
            if let Some(s) = &r.side {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }

    /// Every level and side as a column of a comparison (named `2,000 users go`), its rounds
    /// the column's runs, in the order they ran.
    pub fn columns(&self) -> Vec<crate::Side> {
        let mut out: Vec<crate::Side> = Vec::new();
        for r in &self.runs {
            let name = Coordinates {
                round: 1,
                ..r.at.clone()
            }
            .title(1);
            let name = if name.is_empty() { "run".into() } else { name };
            match out.iter_mut().find(|s| s.name == name) {
                Some(s) => s.runs.push(r.result.clone()),
                None => out.push(crate::Side {
                    name,
                    runs: vec![r.result.clone()],
                }),
            }
        }
        out
    }

    /// The runs as the sides of a comparison (each side's rounds, at one level): with levels,
    /// the level given, else the only one.
    pub fn comparison_sides(&self, level: Option<Level>) -> Vec<crate::Side> {
        let mut out: Vec<crate::Side> = Vec::new();
        for r in self.runs.iter().filter(|r| r.at.level == level) {
            let name = r.at.side.clone().unwrap_or_else(|| "run".into());
            match out.iter_mut().find(|s| s.name == name) {
                Some(s) => s.runs.push(r.result.clone()),
                None => out.push(crate::Side {
                    name,
                    runs: vec![r.result.clone()],
                }),
            }
        }
        out
    }
}

/// The JSON Schema of [`GridResult`], as checked into the repository as `schema-grid.json`.
pub fn grid_schema() -> Result<String, serde_json::Error> {
    let schema = schemars::schema_for!(GridResult);
    Ok(serde_json::to_string_pretty(&schema)? + "\n")
}

/// Reads a grid's JSON document, if `text` is one.
pub fn read_grid(text: &str) -> Option<Result<GridResult, serde_json::Error>> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    if doc.get("kind")?.as_str()? != GRID_KIND {
        return None;
    }
    Some(serde_json::from_value(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_parse_lists_and_ranges_and_refuse_nonsense() {
        assert_eq!(
            Level::parse_sweep("users=10,50..200:50").unwrap(),
            [10, 50, 100, 150, 200].map(Level::Users).to_vec()
        );
        assert_eq!(
            Level::parse_sweep("rate=2000,2500.5").unwrap(),
            vec![Level::Rate(2000.0), Level::Rate(2500.5)]
        );
        for bad in [
            "users",
            "conns=1,2",
            "users=1.5",
            "users=0",
            "rate=-3",
            "users=10..1:1",
            "users=1..10",
            "users=1..100000:1",
            "users=ten",
            "users=2,2",
            "users=10,5..20:5",
        ] {
            assert!(Level::parse_sweep(bad).is_err(), "{bad} parsed");
        }
        let twice = Level::parse_sweep("rate=1000,1500,1000").unwrap_err();
        assert!(twice.contains("the level 1000 is given twice"), "{twice}");
    }

    #[test]
    fn paired_ladders_move_both_axes_together() {
        let paired = |users, rate| Level::Paired { users, rate };
        assert_eq!(
            Level::parse_sweep("users:rate=300:2000,500:3000,1000:10000").unwrap(),
            vec![
                paired(300, 2000.0),
                paired(500, 3000.0),
                paired(1000, 10000.0)
            ]
        );
        assert_eq!(
            Level::parse_sweep("rate:users=2000:300").unwrap(),
            vec![paired(300, 2000.0)]
        );
        for (bad, says) in [
            (
                "users:rate=300:2000,500",
                "the rung `500` gives 1 of the 2 values",
            ),
            (
                "users:rate=300:2000:5",
                "the rung `300:2000:5` gives 3 of the 2 values",
            ),
            ("users:conns=1:2", "pairs `users` and `rate`"),
            ("users:rate=1.5:20", "users come in whole numbers"),
            ("users:rate=10:0", "a level must be above 0"),
            ("users:rate=10:100,10:100", "the rung 10:100 is given twice"),
        ] {
            let e = Level::parse_sweep(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        assert_eq!(Level::pair(&[1, 2], &[10.0, 20.0]).unwrap().len(), 2);
        assert!(Level::pair(&[1, 2], &[10.0]).is_none());
        assert_eq!(paired(300, 2000.0).to_string(), "300 users at 2000/s");
    }
}
