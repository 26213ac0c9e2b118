//! The scenario file as written: YAML shapes, with the location of every value a later check
//! may need to point at. Unknown fields are errors.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// Named base URLs.
    #[serde(default)]
    pub targets: BTreeMap<String, Spanned<String>>,
    /// Variables every user starts with.
    #[serde(default)]
    pub variables: BTreeMap<String, serde_json::Value>,
    /// Named CSV data sources.
    #[serde(default)]
    pub data: BTreeMap<String, Spanned<DataSource>>,
    /// The load model, with the place of each value (checked into a [`Load`] when compiled).
    #[serde(default)]
    pub load: LoadSection,
    /// Pass/fail conditions, as on the command line.
    #[serde(default)]
    pub thresholds: Vec<Spanned<String>>,
    /// What a failed check or request does to the rest of the iteration.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// The steps of one iteration (spanned, so an empty list can be pointed at).
    pub steps: Spanned<Vec<Spanned<Item>>>,
    /// Docker containers to watch (used when container stats are available).
    #[serde(default)]
    pub containers: Vec<String>,
}

/// What a failure does to the rest of the iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Skip the rest of this iteration (the default).
    #[default]
    SkipIteration,
    /// Go on with the next step.
    Continue,
}

/// A CSV file feeding rows to users.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSource {
    /// The CSV file, relative to the scenario file; its first line names the columns.
    pub file: String,
    /// How rows are handed out.
    #[serde(default)]
    pub mode: DataMode,
    /// What happens when the rows run out.
    pub on_exhausted: Option<Exhausted>,
}

/// How rows are handed out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataMode {
    /// Each iteration of any user takes the next row.
    #[default]
    Sequential,
    /// Each iteration takes a random row.
    Random,
    /// Each user takes one row of its own for all its iterations.
    Unique,
}

/// What happens when the rows run out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// Start again from the first row.
    Wrap,
    /// The user that finds no row stops.
    StopUser,
}

/// The load section as written, each value with its place, so a bad value is blamed on the
/// file and line rather than on the flag it stands in for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSection {
    /// Closed loop: virtual users.
    pub users: Option<Spanned<u32>>,
    /// Closed loop: users ramping, `DURATION:USERS,...`.
    pub user_stages: Option<Spanned<String>>,
    /// Stop after this many iterations' requests in all (open loop: arrivals).
    pub requests: Option<Spanned<u64>>,
    /// Closed loop: iterations per user.
    pub iterations: Option<Spanned<u64>>,
    /// How long to run (`30s`, `2m`).
    pub duration: Option<Spanned<String>>,
    /// Closed loop: pause after each iteration.
    pub think_time: Option<Spanned<String>>,
    /// Open loop: iterations started per second.
    pub rate: Option<Spanned<f64>>,
    /// Open loop: rate ramping, `DURATION:RATE,...`.
    pub rate_stages: Option<Spanned<String>>,
    /// Open loop: `even` or `poisson`.
    pub arrivals: Option<Spanned<String>>,
    /// Open loop: at most this many iterations at once.
    pub max_in_flight: Option<Spanned<u32>>,
    /// Open loop: queue of waiting arrivals.
    pub queue: Option<Spanned<u32>>,
}

/// The load section, checked (every value parses and is in range, and the section does not mix
/// the open and the closed loop); flags on the command line override it.
#[derive(Debug, Clone, Default)]
pub struct Load {
    /// Closed loop: virtual users.
    pub users: Option<u32>,
    /// Closed loop: users ramping, `DURATION:USERS,...`.
    pub user_stages: Option<String>,
    /// Stop after this many iterations' requests in all (open loop: arrivals).
    pub requests: Option<u64>,
    /// Closed loop: iterations per user.
    pub iterations: Option<u64>,
    /// How long to run (`30s`, `2m`).
    pub duration: Option<String>,
    /// Closed loop: pause after each iteration.
    pub think_time: Option<String>,
    /// Open loop: iterations started per second.
    pub rate: Option<f64>,
    /// Open loop: rate ramping, `DURATION:RATE,...`.
    pub rate_stages: Option<String>,
    /// Open loop: `even` or `poisson`.
    pub arrivals: Option<String>,
    /// Open loop: at most this many iterations at once.
    pub max_in_flight: Option<u32>,
    /// Open loop: queue of waiting arrivals.
    pub queue: Option<u32>,
}

/// A step (`label` and `request`), or a group of steps measured as one transaction (`group`
/// and `steps`). One shape for both, so every field keeps its location; [`crate::compile`]
/// checks that an item is one or the other.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    /// A step's row label.
    pub label: Option<Spanned<String>>,
    /// A step's request.
    pub request: Option<Spanned<Request>>,
    /// Variables to take from the response.
    #[serde(default)]
    pub extract: BTreeMap<String, Spanned<Extract>>,
    /// Conditions on the response.
    #[serde(default)]
    pub checks: Vec<Spanned<Check>>,
    /// A pause after the step: `100ms`, or a uniform range `50ms..200ms`.
    pub think_time: Option<Spanned<String>>,
    /// A group's row label.
    pub group: Option<Spanned<String>>,
    /// A group's steps.
    pub steps: Option<Vec<Spanned<Item>>>,
}

/// An HTTP request; strings may hold `{{ templates }}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The target's name (may be left out when there is only one target).
    pub target: Option<Spanned<String>>,
    /// The method (default GET).
    #[serde(default = "get")]
    pub method: Spanned<String>,
    /// The path and query, appended to the target's base URL.
    pub path: Spanned<String>,
    /// Headers.
    #[serde(default)]
    pub headers: BTreeMap<String, Spanned<String>>,
    /// A body, as text.
    pub body: Option<Spanned<String>>,
    /// A body, as JSON (sent with `content-type: application/json`); string values may hold
    /// templates.
    pub json: Option<Spanned<serde_json::Value>>,
}

fn get() -> Spanned<String> {
    Spanned::new(
        "GET".into(),
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}

/// Where a variable comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Extract {
    /// The first match of a JSONPath on the JSON body.
    Jsonpath(String),
    /// A response header.
    Header(String),
    /// The first capture group (or the whole match) of a regex on the body.
    Regex(String),
}

/// A condition on a response.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// The status must be this.
    pub status: Option<u16>,
    /// A JSONPath on the body, with `equals` or `exists`.
    pub jsonpath: Option<String>,
    /// The JSONPath's first match must equal this.
    pub equals: Option<serde_json::Value>,
    /// The JSONPath must (or must not) match.
    pub exists: Option<bool>,
    /// The body must contain this text.
    pub body_contains: Option<String>,
    /// The step must finish within this long (`50ms`).
    pub latency_under: Option<String>,
}
