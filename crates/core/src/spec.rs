//! A load as written: what the command line's flags and a scenario's `load:` section both say,
//! every part optional. One spec goes [`LoadSpec::over`] another (flags over a file), and
//! [`LoadSpec::plan`] validates the result into a [`RunPlan`].
//!
//! Its values are typed (durations, stages, arrivals): text is read where it is written, so
//! that a bad value is blamed on its place (a scenario file's `file:line:column`, a flag), with
//! [`duration()`], [`stages()`] and [`arrivals()`] for a caller that reads text. What only the whole
//! spec can get wrong is [`LoadSpec::plan`]'s, and its messages name each value through a
//! [`Names`] function, so the command line blames `-q/--rate` and a library user or a file
//! blames `rate`; the library itself names no flag.

use std::time::Duration;

use crate::stages::{self, parse_duration};
use crate::{Arrivals, ClosedLoop, LoadModel, OpenLoop, Rate, RunPlan, Stage, Users};

/// A load as written, its values read; `None` is "not given".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadSpec {
    /// Closed loop: virtual users.
    pub users: Option<u32>,
    /// Closed loop: users ramping (`DURATION:USERS,...` as text, see [`stages()`]).
    pub user_stages: Option<Vec<Stage>>,
    /// Stop after this many requests in all (open loop: arrivals).
    pub requests: Option<u64>,
    /// Closed loop: iterations per user.
    pub iterations: Option<u64>,
    /// How long to run.
    pub duration: Option<Duration>,
    /// Closed loop: pause after each iteration.
    pub think_time: Option<Duration>,
    /// Open loop: iterations started per second.
    pub rate: Option<f64>,
    /// Open loop: rate ramping (`DURATION:RATE,...` as text).
    pub rate_stages: Option<Vec<Stage>>,
    /// Open loop: how arrivals are spaced.
    pub arrivals: Option<Arrivals>,
    /// Open loop: at most this many iterations at once.
    pub max_in_flight: Option<u32>,
    /// Open loop: queue of waiting arrivals.
    pub queue: Option<u32>,
    /// Worker threads (0 or none: one per core).
    pub threads: Option<usize>,
    /// How long requests in flight may finish after the end (default 5s).
    pub grace: Option<Duration>,
    /// Open loop: a start this much behind schedule counts as late (default 1ms).
    pub late_after: Option<Duration>,
    /// Run the load this long before measuring, recording nothing.
    pub warmup: Option<Duration>,
    /// Start the load this long after the run starts: a workload of several starting later
    /// than the others (the plan's [`RunPlan::start`], which the run waits for).
    pub start: Option<Duration>,
}

/// A value of a [`LoadSpec`], for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// `users`.
    Users,
    /// `user_stages`.
    UserStages,
    /// `requests`.
    Requests,
    /// `iterations`.
    Iterations,
    /// `duration`.
    Duration,
    /// `think_time`.
    ThinkTime,
    /// `rate`.
    Rate,
    /// `rate_stages`.
    RateStages,
    /// `arrivals`.
    Arrivals,
    /// `max_in_flight`.
    MaxInFlight,
    /// `queue`.
    Queue,
    /// `grace`.
    Grace,
    /// `late_after`.
    LateAfter,
    /// `warmup`.
    Warmup,
    /// `start`.
    Start,
}

impl Field {
    /// Its key, as a scenario file writes it.
    pub fn key(self) -> &'static str {
        match self {
            Field::Users => "users",
            Field::UserStages => "user_stages",
            Field::Requests => "requests",
            Field::Iterations => "iterations",
            Field::Duration => "duration",
            Field::ThinkTime => "think_time",
            Field::Rate => "rate",
            Field::RateStages => "rate_stages",
            Field::Arrivals => "arrivals",
            Field::MaxInFlight => "max_in_flight",
            Field::Queue => "queue",
            Field::Grace => "grace",
            Field::LateAfter => "late_after",
            Field::Warmup => "warmup",
            Field::Start => "start",
        }
    }
}

/// How messages name a field: the command line by its flag, a file by its key.
pub type Names<'a> = &'a dyn Fn(Field) -> &'static str;

/// Names fields by their keys.
pub fn keys(f: Field) -> &'static str {
    f.key()
}

/// Why a spec makes no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

impl LoadSpec {
    /// This spec over `below` (flags over a file's section), by group: a model value here
    /// (users, user_stages, rate, rate_stages) replaces the whole model below, and an end here
    /// (requests, duration, iterations) replaces every end below; the rest is taken value by
    /// value. An open loop drops the closed loop's iterations and think time.
    pub fn over(&self, below: &LoadSpec) -> LoadSpec {
        let mut m = self.clone();
        if self.users.is_none()
            && self.user_stages.is_none()
            && self.rate.is_none()
            && self.rate_stages.is_none()
        {
            m.users = below.users;
            m.user_stages = below.user_stages.clone();
            m.rate = below.rate;
            m.rate_stages = below.rate_stages.clone();
        }
        if self.requests.is_none() && self.duration.is_none() && self.iterations.is_none() {
            m.requests = below.requests;
            m.duration = below.duration;
            m.iterations = below.iterations;
        }
        if m.is_open() {
            m.iterations = None;
        } else {
            m.think_time = m.think_time.or(below.think_time);
        }
        if self.users.is_none() && m.is_open() {
            // `users` with a rate bounds the requests in flight itself.
            m.max_in_flight = m.max_in_flight.or(below.max_in_flight);
        }
        if m.is_open() {
            m.queue = m.queue.or(below.queue);
            m.arrivals = m.arrivals.or(below.arrivals);
        }
        m.threads = m.threads.or(below.threads);
        m.grace = m.grace.or(below.grace);
        m.late_after = m.late_after.or(below.late_after);
        m.warmup = m.warmup.or(below.warmup);
        m.start = m.start.or(below.start);
        m
    }

    /// Whether this is an open loop (a rate is given).
    pub fn is_open(&self) -> bool {
        self.rate.is_some() || self.rate_stages.is_some()
    }

    /// Validates the spec into a plan for `target`; messages name fields through `names`.
    pub fn plan(&self, target: &str, names: Names) -> Result<RunPlan, SpecError> {
        let n = names;
        let usage = |m: String| SpecError(m);
        let dur = self.duration;
        if dur == Some(Duration::ZERO) {
            return Err(usage(format!(
                "{} must be longer than zero",
                n(Field::Duration)
            )));
        }
        let open = self.is_open();
        if open && (self.iterations.is_some() || self.think_time.is_some()) {
            return Err(usage(format!(
                "{} and {} make an open loop; {} and {} belong to the closed loop \
                 ({} or {} bound the requests in flight)",
                n(Field::Rate),
                n(Field::RateStages),
                n(Field::Iterations),
                n(Field::ThinkTime),
                n(Field::Users),
                n(Field::MaxInFlight)
            )));
        }
        if !open
            && (self.max_in_flight.is_some() || self.queue.is_some() || self.arrivals.is_some())
        {
            // Said, not ignored: a closed loop has no arrivals to space, bound or queue.
            return Err(usage(format!(
                "{}, {} and {} belong to the open loop: give {} or {} too",
                n(Field::MaxInFlight),
                n(Field::Queue),
                n(Field::Arrivals),
                n(Field::Rate),
                n(Field::RateStages)
            )));
        }
        if open && self.users.is_some() && self.max_in_flight.is_some() {
            return Err(usage(format!(
                "with {}, {} and {} both bound the requests in flight: give one",
                n(Field::Rate),
                n(Field::Users),
                n(Field::MaxInFlight)
            )));
        }
        let model = if open {
            let rate = match (&self.rate_stages, self.rate) {
                (Some(s), start) => {
                    let start = start.unwrap_or(0.0);
                    if !(start >= 0.0 && start.is_finite()) {
                        return Err(usage(format!(
                            "{} {start}: the starting rate of {} must be 0 or more",
                            n(Field::Rate),
                            n(Field::RateStages)
                        )));
                    }
                    Rate::Stages {
                        start,
                        stages: s.clone(),
                    }
                }
                (None, Some(r)) => {
                    if !(r > 0.0 && r.is_finite()) {
                        return Err(usage(format!(
                            "{} {r}: must be a positive number of requests per second",
                            n(Field::Rate)
                        )));
                    }
                    Rate::Constant(r)
                }
                (None, None) => {
                    return Err(usage(format!(
                        "an open loop needs {} or {}",
                        n(Field::Rate),
                        n(Field::RateStages)
                    )))
                }
            };
            if matches!(rate, Rate::Constant(_)) && dur.is_none() && self.requests.is_none() {
                return Err(usage(format!(
                    "an open-loop run needs an end: give {} or {}",
                    n(Field::Duration),
                    n(Field::Requests)
                )));
            }
            // `-c 500 -q 3000` is how oha and hey users (and JMeter's threads under a throughput
            // timer) write a rate-limited run: the open loop, with at most 500 in flight.
            let max_in_flight = self.max_in_flight.or(self.users).unwrap_or(1000);
            if max_in_flight == 0 {
                return Err(usage(format!(
                    "{} must be at least 1",
                    n(Field::MaxInFlight)
                )));
            }
            let arrivals = self.arrivals.unwrap_or(Arrivals::Even);
            LoadModel::Open(OpenLoop {
                rate,
                arrivals,
                max_in_flight,
                queue: self.queue.unwrap_or(max_in_flight),
                requests: self.requests,
                duration: dur,
            })
        } else {
            let users = match &self.user_stages {
                Some(s) => Users::Stages(s.clone()),
                None => {
                    let count = self.users.unwrap_or(50);
                    if count == 0 {
                        return Err(usage(format!("{} must be at least 1", n(Field::Users))));
                    }
                    Users::Fixed(count)
                }
            };
            if let Users::Stages(s) = &users {
                if s.iter().any(|s| s.target.fract() != 0.0) {
                    return Err(usage(format!(
                        "{}: user counts must be whole numbers",
                        n(Field::UserStages)
                    )));
                }
            }
            if self.requests == Some(0) || self.iterations == Some(0) {
                return Err(usage(format!(
                    "{} and {} must be at least 1",
                    n(Field::Requests),
                    n(Field::Iterations)
                )));
            }
            let think_time = self.think_time;
            if matches!(users, Users::Fixed(_))
                && dur.is_none()
                && self.requests.is_none()
                && self.iterations.is_none()
            {
                // Like oha and wrk, a bare run has an end: 200 requests per user is too little;
                // 10 s is usual.
                return Err(usage(format!(
                    "the run needs an end: give {}, {}, {} or {}",
                    n(Field::Requests),
                    n(Field::Duration),
                    n(Field::Iterations),
                    n(Field::UserStages)
                )));
            }
            LoadModel::Closed(ClosedLoop {
                users,
                requests: self.requests,
                iterations: self.iterations,
                duration: dur,
                think_time,
            })
        };
        let mut plan = RunPlan::new(target, model);
        plan.threads = self.threads.unwrap_or(0);
        if let Some(g) = self.grace {
            plan.grace = g;
        }
        if let Some(l) = self.late_after {
            plan.late_after = l;
        }
        if let Some(w) = self.warmup {
            plan.warmup = w;
            let counted = self.requests.is_some() || self.iterations.is_some();
            let staged = self.user_stages.is_some() || self.rate_stages.is_some();
            if !plan.warmup.is_zero() && (counted || staged || dur.is_none()) {
                // A count would be spent partly warming up, and stages are a ramp of their own.
                return Err(usage(format!(
                    "{} runs the load for a while before it is measured: give the measurement \
                     a duration ({}), not {}, {} or stages",
                    n(Field::Warmup),
                    n(Field::Duration),
                    n(Field::Requests),
                    n(Field::Iterations)
                )));
            }
        }
        if let Some(s) = self.start {
            plan.start = s;
        }
        plan.validate().map_err(|e| usage(e.to_string()))?;
        Ok(plan)
    }
}

/// A duration as text (`30s`, `2m`, `250ms`) read for the value `name` (a flag, a key), which
/// the message names.
pub fn duration(name: &str, v: &str) -> Result<Duration, SpecError> {
    parse_duration(v).map_err(|e| {
        SpecError(format!(
            "{name} {v:?}: not a duration ({e}); write e.g. 30s, 2m, 250ms"
        ))
    })
}

/// Stages as text (`30s:100,2m:100,10s:0`) read for the value `name`, which the message names.
pub fn stages(name: &str, v: &str) -> Result<Vec<Stage>, SpecError> {
    stages::parse(v).map_err(|e| SpecError(format!("{name} {v:?}: {e}")))
}

/// Arrivals as text (`even`, `poisson`, `gamma:SHAPE`) read for the value `name`, which the
/// message names. The command line and a scenario file both read them here.
pub fn arrivals(name: &str, v: &str) -> Result<Arrivals, SpecError> {
    match v.split_once(':') {
        None if v == "even" => Ok(Arrivals::Even),
        None if v == "poisson" => Ok(Arrivals::Poisson),
        None if v == "gamma" => Err(SpecError(format!(
            "{name} `gamma` needs a shape: gamma:SHAPE, e.g. gamma:0.5 (burstier than poisson) \
             or gamma:4 (more even)"
        ))),
        Some(("gamma", k)) => match k.trim().parse::<f64>() {
            Ok(shape) if shape > 0.0 && shape.is_finite() => Ok(Arrivals::Gamma { shape }),
            _ => Err(SpecError(format!(
                "{name} `{v}`: the shape must be a number above 0 (1 is poisson, below 1 \
                 burstier, above 1 more even), not `{k}`"
            ))),
        },
        _ => Err(SpecError(format!(
            "{name} must be `even`, `poisson` or `gamma:SHAPE`, not `{v}`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_over_a_file_replace_by_group() {
        let file = LoadSpec {
            users: Some(20),
            duration: Some(Duration::from_secs(30)),
            think_time: Some(Duration::from_secs(1)),
            queue: Some(7),
            ..LoadSpec::default()
        };
        // A model flag replaces the file's model; the file's end and queue stay.
        let flags = LoadSpec {
            rate: Some(100.0),
            ..LoadSpec::default()
        };
        let m = flags.over(&file);
        assert_eq!((m.users, m.rate), (None, Some(100.0)));
        assert_eq!(m.duration, Some(Duration::from_secs(30)));
        assert_eq!(m.think_time, None, "an open loop has no think time");
        assert_eq!(m.queue, Some(7));
        // An end flag replaces every end of the file.
        let flags = LoadSpec {
            requests: Some(5),
            ..LoadSpec::default()
        };
        let m = flags.over(&file);
        assert_eq!((m.requests, m.duration), (Some(5), None));
        assert_eq!(m.users, Some(20));
    }

    #[test]
    fn arrivals_read_gamma_with_its_shape_and_plans_refuse_a_bad_one() {
        assert_eq!(
            arrivals("a", "gamma:0.25"),
            Ok(Arrivals::Gamma { shape: 0.25 })
        );
        assert_eq!(
            arrivals("a", "gamma: 4"),
            Ok(Arrivals::Gamma { shape: 4.0 })
        );
        for bad in [
            "gamma:0",
            "gamma:-2",
            "gamma:NaN",
            "gamma:inf",
            "gamma:",
            "gamma",
            "Gamma:1",
        ] {
            assert!(arrivals("a", bad).is_err(), "{bad}");
        }
        // A library caller's plan is checked too: the spec and the file are not the only way in.
        let mut plan = LoadSpec {
            rate: Some(10.0),
            requests: Some(5),
            arrivals: Some(Arrivals::Gamma { shape: 0.5 }),
            ..LoadSpec::default()
        }
        .plan("t", &keys)
        .unwrap();
        if let LoadModel::Open(o) = &mut plan.model {
            o.arrivals = Arrivals::Gamma { shape: -1.0 };
        }
        assert_eq!(plan.validate(), Err(crate::PlanError::BadShape(-1.0)));
    }

    #[test]
    fn open_loop_settings_without_a_rate_are_refused_not_ignored() {
        for spec in [
            LoadSpec {
                users: Some(5),
                max_in_flight: Some(10),
                requests: Some(100),
                ..LoadSpec::default()
            },
            LoadSpec {
                queue: Some(10),
                requests: Some(100),
                ..LoadSpec::default()
            },
            LoadSpec {
                arrivals: Some(Arrivals::Poisson),
                duration: Some(Duration::from_secs(1)),
                ..LoadSpec::default()
            },
        ] {
            let e = spec.plan("t", &keys).unwrap_err().to_string();
            assert!(e.contains("belong to the open loop"), "{e}");
        }
        // Closed-loop flags over an open-loop file leave its bound and queue behind.
        let file = LoadSpec {
            rate: Some(100.0),
            max_in_flight: Some(10),
            queue: Some(5),
            duration: Some(Duration::from_secs(1)),
            ..LoadSpec::default()
        };
        let flags = LoadSpec {
            users: Some(3),
            ..LoadSpec::default()
        };
        let closed = flags.over(&file);
        assert_eq!((closed.max_in_flight, closed.queue), (None, None));
        assert!(closed.plan("t", &keys).is_ok());
        // And an open loop keeps them.
        let open = LoadSpec::default().over(&file);
        assert_eq!((open.max_in_flight, open.queue), (Some(10), Some(5)));
        assert!(open.plan("t", &keys).is_ok());
    }

    #[test]
    fn messages_name_fields_as_the_caller_does() {
        let spec = LoadSpec {
            rate: Some(-1.0),
            duration: Some(Duration::from_secs(2)),
            ..LoadSpec::default()
        };
        let by_key = spec.plan("t", &keys).unwrap_err().to_string();
        assert!(
            by_key.starts_with("rate -1: must be a positive"),
            "{by_key}"
        );
        let flag = |f: Field| match f {
            Field::Rate => "-q/--rate",
            other => other.key(),
        };
        let by_flag = spec.plan("t", &flag).unwrap_err().to_string();
        assert!(by_flag.starts_with("-q/--rate -1:"), "{by_flag}");
        let plan = LoadSpec {
            users: Some(3),
            iterations: Some(2),
            grace: Some(Duration::from_secs(1)),
            ..LoadSpec::default()
        }
        .plan("t", &keys)
        .unwrap();
        assert_eq!(plan.grace, Duration::from_secs(1));
        assert!(matches!(plan.model, LoadModel::Closed(ref c) if c.users == Users::Fixed(3)));
    }
}
