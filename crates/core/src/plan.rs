use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::stages;

/// One ramping stage: move linearly to `target` over `duration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stage {
    /// How long the stage lasts.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub duration: Duration,
    /// The users or arrivals per second reached at the end of the stage.
    pub target: f64,
}

/// How many virtual users a closed loop runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Users {
    /// A constant number of users.
    Fixed(u32),
    /// Users ramping from zero through stages.
    Stages(Vec<Stage>),
}

/// The closed loop: users each loop the scenario, starting the next iteration when the last ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClosedLoop {
    /// The users.
    pub users: Users,
    /// Stop after this many requests in all.
    pub requests: Option<u64>,
    /// Stop each user after this many iterations.
    pub iterations: Option<u64>,
    /// Stop after this long (stages imply their total length).
    #[serde(with = "opt_secs")]
    #[schemars(with = "Option<f64>")]
    pub duration: Option<Duration>,
    /// A pause after each iteration.
    #[serde(with = "opt_secs")]
    #[schemars(with = "Option<f64>")]
    pub think_time: Option<Duration>,
}

impl ClosedLoop {
    /// `users` fixed users, each running `iterations` iterations, with no other bound.
    pub fn iterations(users: u32, iterations: u64) -> ClosedLoop {
        ClosedLoop {
            users: Users::Fixed(users),
            requests: None,
            iterations: Some(iterations),
            duration: None,
            think_time: None,
        }
    }
}

/// How arrivals are spaced in the open loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Exactly `1/rate` apart.
    Even,
    /// A Poisson process: exponential gaps with mean `1/rate`.
    Poisson,
    /// Gamma-distributed gaps with mean `1/rate` (vLLM's `--burstiness`): the coefficient of
    /// variation of the gaps is `1/sqrt(shape)`, so shape 1 is Poisson, below 1 burstier, above
    /// 1 more even.
    Gamma {
        /// The gamma distribution's shape, above 0.
        shape: f64,
    },
}

/// The open loop's arrival rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// A constant number of arrivals per second.
    Constant(f64),
    /// A rate ramping from `start` through stages.
    Stages {
        /// The rate at time zero.
        start: f64,
        /// The stages.
        stages: Vec<Stage>,
    },
}

impl Rate {
    /// The rate `t` seconds into the run (after the stages, their last target).
    pub fn at(&self, t: f64) -> f64 {
        match self {
            Rate::Constant(r) => *r,
            Rate::Stages { start, stages } => stages::value_at(*start, stages, t),
        }
    }

    /// The highest rate the schedule reaches.
    pub fn peak(&self) -> f64 {
        match self {
            Rate::Constant(r) => *r,
            Rate::Stages { start, stages } => {
                stages.iter().map(|s| s.target).fold(*start, f64::max)
            }
        }
    }
}

/// The open loop: arrivals on a schedule, whatever the target's speed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenLoop {
    /// The arrival rate.
    pub rate: Rate,
    /// Even, Poisson or gamma (bursty) spacing.
    pub arrivals: Arrivals,
    /// At most this many iterations run at once.
    pub max_in_flight: u32,
    /// Arrivals that find every slot busy wait in a queue this long; past it they are dropped.
    pub queue: u32,
    /// Stop after this many arrivals.
    pub requests: Option<u64>,
    /// Stop after this long (stages imply their total length).
    #[serde(with = "opt_secs")]
    #[schemars(with = "Option<f64>")]
    pub duration: Option<Duration>,
}

/// When work is due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadModel {
    /// Virtual users looping.
    Closed(ClosedLoop),
    /// A target arrival rate.
    Open(OpenLoop),
}

/// The highest arrival rate a plan may ask for: far past what any machine starts (a few million a
/// second), and low enough that the arrivals of a 100-day run still fit the counters.
pub(crate) const MAX_RATE: f64 = 1e12;

/// Which share of a plan this process runs: shard `index` of `count` (0-based). Closed loop:
/// the users `u` with `u % count == index`, and that share of `-n`; open loop: positions
/// `index, index + count, ...` of the schedule. The shards together run the whole plan exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards run the plan.
    pub count: u32,
}

impl Shard {
    /// The whole plan in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Whether this is the whole plan.
    pub fn is_whole(&self) -> bool {
        self.count <= 1
    }

    /// This shard's share of `total`: `total / count`, plus one for the first `total % count`.
    pub fn share(&self, total: u64) -> u64 {
        let (n, i) = (u64::from(self.count.max(1)), u64::from(self.index));
        total / n + u64::from(i < total % n)
    }
}

impl Shard {
    /// This shard's share of a closed loop's `total` requests among `users`: the requests of
    /// its own users, each user's share being `total / users`, plus one for the first
    /// `total % users`. A shard without users has none (an even split of `-n` gave it a share
    /// it could never send, and it waited forever), and the shards' shares add up to `total`.
    pub fn requests(&self, total: u64, users: u64) -> u64 {
        if users == 0 {
            return self.share(total);
        }
        self.share(users) * (total / users) + self.share(total % users)
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

/// A validated description of a run: what the engine takes. Build it from flags or a scenario
/// file, then call [`RunPlan::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunPlan {
    /// What the run targets, for the report (a URL or a scenario file).
    pub target: String,
    /// The load model.
    pub model: LoadModel,
    /// Worker threads that run users; 0 means one per core.
    pub threads: usize,
    /// How long in-flight requests may finish after the run stops before they are aborted.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub grace: Duration,
    /// An open-loop arrival that starts later than this after its intended time counts as late.
    #[serde(with = "secs")]
    #[schemars(with = "f64")]
    pub late_after: Duration,
    /// The share of the plan this process runs (`--shard`); the whole plan by default.
    #[serde(default, skip_serializing_if = "Shard::is_whole")]
    pub shard: Shard,
    /// The load runs this long before the measurement, which then lasts the plan's duration:
    /// nothing of it is recorded, and connections stay open into the measurement.
    #[serde(default, with = "secs", skip_serializing_if = "Duration::is_zero")]
    #[schemars(with = "f64")]
    pub warmup: Duration,
    /// The load starts this long after the run does (a scenario's `load: start`: a workload of
    /// several starting later than the others); the run waits for it, after the shards' common
    /// start if there is one. Not in the result: its times are the load's own.
    #[serde(skip)]
    pub start: Duration,
    /// Goodput's objectives (`--goodput`): a request streamed in tokens that meets them all is
    /// good (see [`crate::stream`]); none by default.
    #[serde(default, skip_serializing_if = "crate::stream::Goodput::is_empty")]
    #[schemars(with = "Option<String>")]
    pub goodput: crate::stream::Goodput,
    /// Seeds the open loop's random arrivals (`--seed`, a scenario's `seed:`): Poisson and
    /// gamma arrivals are drawn from it, the same in every run of the same plan (and the same
    /// number of shards and workers). Without it, Poisson arrivals are drawn afresh each run
    /// and gamma ones from a seed fixed by the shape, the same bursts in every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// Why a plan is not runnable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A closed loop with no way to end.
    #[error("the run has no end: give it a request count, iterations, a duration or stages")]
    Endless,
    /// Zero users or zero in-flight slots.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A rate that is not a positive number.
    #[error("the rate must be a positive number of requests per second, not {0}")]
    BadRate(f64),
    /// A rate so high that its arrivals could not even be counted over a long run.
    #[error("a rate of {0} per second is past any generator (the most accepted is {MAX_RATE:e}); a rate past what this machine can start is run at its best, the rest counted as dropped")]
    RateTooHigh(f64),
    /// Gamma arrivals whose shape is not a positive number.
    #[error("the shape of gamma arrivals must be a positive number, not {0}")]
    BadShape(f64),
}

impl RunPlan {
    /// A plan with defaults around a model.
    pub fn new(target: impl Into<String>, model: LoadModel) -> Self {
        RunPlan {
            target: target.into(),
            model,
            threads: 0,
            grace: Duration::from_secs(2),
            late_after: Duration::from_millis(10),
            shard: Shard::WHOLE,
            warmup: Duration::ZERO,
            start: Duration::ZERO,
            goodput: crate::stream::Goodput::default(),
            seed: None,
        }
    }

    /// Whether the plan draws its arrivals at random (an open loop's Poisson or gamma), which
    /// is what [`RunPlan::seed`] seeds.
    pub fn random_arrivals(&self) -> bool {
        matches!(&self.model, LoadModel::Open(o) if o.arrivals != Arrivals::Even)
    }

    /// Checks that the plan can run and ends by itself.
    pub fn validate(&self) -> Result<(), PlanError> {
        match &self.model {
            LoadModel::Closed(c) => {
                if let Users::Fixed(0) = c.users {
                    return Err(PlanError::Zero("users"));
                }
                let staged = matches!(c.users, Users::Stages(_));
                if c.requests.is_none() && c.iterations.is_none() && c.duration.is_none() && !staged
                {
                    return Err(PlanError::Endless);
                }
            }
            LoadModel::Open(o) => {
                if o.max_in_flight == 0 {
                    return Err(PlanError::Zero("max in flight"));
                }
                if o.rate.peak() > MAX_RATE {
                    return Err(PlanError::RateTooHigh(o.rate.peak()));
                }
                if let Arrivals::Gamma { shape } = o.arrivals {
                    if !(shape > 0.0 && shape.is_finite()) {
                        return Err(PlanError::BadShape(shape));
                    }
                }
                match &o.rate {
                    Rate::Constant(r) if !(*r > 0.0 && r.is_finite()) => {
                        return Err(PlanError::BadRate(*r))
                    }
                    Rate::Constant(_) if o.requests.is_none() && o.duration.is_none() => {
                        return Err(PlanError::Endless)
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// How long the run lasts if it runs to its schedule, when that is known: the duration or
    /// the end of the stages, whichever comes first. With iterations per user, stages only say
    /// when users start, and every user that started finishes its iterations: only a duration
    /// ends such a run by the clock.
    pub fn planned_duration(&self) -> Option<Duration> {
        let first = |d: Option<Duration>, s: &[Stage]| {
            let t = stages::total(s);
            Some(d.map_or(t, |d| d.min(t)))
        };
        match &self.model {
            LoadModel::Closed(c) => match &c.users {
                Users::Stages(s) if c.iterations.is_none() => first(c.duration, s),
                _ => c.duration,
            },
            LoadModel::Open(o) => match &o.rate {
                Rate::Stages { stages: s, .. } => first(o.duration, s),
                Rate::Constant(_) => o.duration,
            },
        }
    }

    /// The most users or in-flight requests the plan can have at once: its connection need.
    pub fn peak_concurrency(&self) -> u64 {
        match &self.model {
            LoadModel::Closed(c) => match &c.users {
                Users::Fixed(n) => u64::from(*n),
                Users::Stages(s) => s.iter().map(|s| s.target.ceil() as u64).max().unwrap_or(0),
            },
            LoadModel::Open(o) => u64::from(o.max_in_flight),
        }
    }

    /// A one-line description of the model, for headers and reports ("closed loop, 1 user, 10
    /// requests").
    pub fn describe(&self) -> String {
        match &self.model {
            LoadModel::Closed(c) => {
                let users = match &c.users {
                    Users::Fixed(n) => plural(u64::from(*n), "user"),
                    Users::Stages(s) => format!("users ramping over {} stages", s.len()),
                };
                let mut parts = vec![format!("closed loop, {users}")];
                if let Some(n) = c.requests {
                    parts.push(plural(n, "request"));
                }
                if let Some(n) = c.iterations {
                    parts.push(format!("{} each", plural(n, "iteration")));
                }
                if let Some(d) = c.duration {
                    parts.push(format!("{}", humantime::format_duration(d)));
                }
                parts.join(", ")
            }
            LoadModel::Open(o) => {
                let rate = match &o.rate {
                    Rate::Constant(r) => format!("{r} arrivals/s"),
                    Rate::Stages { stages, .. } => {
                        format!("rate ramping over {} stages", stages.len())
                    }
                };
                let arrivals = match o.arrivals {
                    Arrivals::Even => "even".to_string(),
                    Arrivals::Poisson => "Poisson".to_string(),
                    Arrivals::Gamma { shape } => format!("gamma, shape {shape}"),
                };
                let mut s = format!(
                    "open loop, {rate} ({arrivals}), at most {} in flight",
                    o.max_in_flight
                );
                if let Some(d) = o.duration {
                    s.push_str(&format!(", {}", humantime::format_duration(d)));
                }
                s
            }
        }
    }
}

mod secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

mod opt_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        match Option::<f64>::deserialize(d)? {
            Some(v) => Duration::try_from_secs_f64(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// `n` things, in the singular for one:
///
/// ```
/// assert_eq!(throng_core::plural(1, "user"), "1 user");
/// assert_eq!(throng_core::plural(2, "request"), "2 requests");
/// ```
pub fn plural(n: u64, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        _ => format!("{n} {thing}s"),
    }
}
