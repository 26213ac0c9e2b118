//! The file's `load:` section, checked where it is written. The command line later merges it
//! under its flags and builds the plan; by then a value has lost its place, so a bad one found
//! there would be blamed on the flag it stands in for (`-z/--duration "ten"` for a file's
//! `duration: ten`). Everything a value can get wrong on its own, and the open and the closed
//! loop mixed within the section, is therefore refused here, naming `file:line:column`, and
//! read into the typed [`Load`] (durations, stages, arrivals), so no text is left to read later.

use serde_saphyr::{Location, Spanned};
use throng_core::stages::{self, parse_duration};
use throng_core::Arrivals;

use crate::compile::ScenarioError;
use crate::file::{Load, LoadSection};

/// Makes an error at a place.
pub(crate) type At<'a> = &'a dyn Fn(Location, String) -> ScenarioError;

/// Checks the section and returns its values.
pub(crate) fn check(l: &LoadSection, at: At) -> Result<Load, ScenarioError> {
    at_least_one(&l.users, "users", at)?;
    at_least_one(&l.requests, "requests", at)?;
    at_least_one(&l.iterations, "iterations", at)?;
    at_least_one(&l.max_in_flight, "max_in_flight", at)?;
    let run_for = l
        .duration
        .as_ref()
        .map(|d| duration(d, "duration", at))
        .transpose()?;
    if let (Some(d), Some(v)) = (&l.duration, run_for) {
        if v.is_zero() {
            return Err(at(
                d.referenced,
                "duration must be longer than zero".to_string(),
            ));
        }
    }
    let think_time = l
        .think_time
        .as_ref()
        .map(|t| duration(t, "think_time", at))
        .transpose()?;
    let warmup = l
        .warmup
        .as_ref()
        .map(|w| duration(w, "warmup", at))
        .transpose()?;
    let start = l
        .start
        .as_ref()
        .map(|s| duration(s, "start", at))
        .transpose()?;
    if let Some(r) = &l.rate {
        // With stages, `rate` is where they start from, and 0 is the usual start.
        let staged = l.rate_stages.is_some();
        let ok = r.value.is_finite() && (r.value > 0.0 || (staged && r.value == 0.0));
        if !ok {
            let want = match staged {
                true => "a number of iterations per second, 0 or more (the start of rate_stages)",
                false => "a number of iterations per second above 0",
            };
            return Err(at(
                r.referenced,
                format!("rate must be {want}, not {}", r.value),
            ));
        }
    }
    let user_stages = match &l.user_stages {
        Some(s) => {
            let list = stage_list(s, "user_stages", at)?;
            if let Some(bad) = list.iter().find(|st| st.target.fract() != 0.0) {
                return Err(at(
                    s.referenced,
                    format!(
                        "user_stages: user counts must be whole numbers, not {}",
                        bad.target
                    ),
                ));
            }
            Some(list)
        }
        None => None,
    };
    let rate_stages = l
        .rate_stages
        .as_ref()
        .map(|s| stage_list(s, "rate_stages", at))
        .transpose()?;
    let arrivals = match &l.arrivals {
        Some(a) => Some(match a.value.as_str() {
            "even" => Arrivals::Even,
            "poisson" => Arrivals::Poisson,
            other => {
                return Err(at(
                    a.referenced,
                    format!("arrivals must be `even` or `poisson`, not `{other}`"),
                ))
            }
        }),
        None => None,
    };
    mixed_loops(l, at)?;
    Ok(Load {
        users: l.users.as_ref().map(|v| v.value),
        user_stages,
        requests: l.requests.as_ref().map(|v| v.value),
        iterations: l.iterations.as_ref().map(|v| v.value),
        duration: run_for,
        think_time,
        rate: l.rate.as_ref().map(|v| v.value),
        rate_stages,
        arrivals,
        max_in_flight: l.max_in_flight.as_ref().map(|v| v.value),
        queue: l.queue.as_ref().map(|v| v.value),
        warmup,
        start,
        ..Load::default()
    })
}

/// Within one section the loops cannot mix: the merge with the flags would keep one side and
/// silently drop the other (an open loop ignores `iterations` and `think_time`).
fn mixed_loops(l: &LoadSection, at: At) -> Result<(), ScenarioError> {
    if let (Some(_), Some(s)) = (&l.users, &l.user_stages) {
        return Err(at(
            s.referenced,
            "give `users` or `user_stages`, not both (user_stages starts from 0 users)".into(),
        ));
    }
    let open = match (&l.rate, &l.rate_stages) {
        (Some(r), _) => Some(("rate", r.referenced)),
        (None, Some(s)) => Some(("rate_stages", s.referenced)),
        (None, None) => None,
    };
    let closed = [
        ("users", l.users.as_ref().map(|v| v.referenced)),
        ("user_stages", l.user_stages.as_ref().map(|v| v.referenced)),
        ("iterations", l.iterations.as_ref().map(|v| v.referenced)),
        ("think_time", l.think_time.as_ref().map(|v| v.referenced)),
    ];
    if let Some((open_key, open_at)) = open {
        if let Some((key, loc)) = closed.iter().find_map(|(k, l)| l.map(|l| (*k, l))) {
            return Err(at(
                loc,
                format!(
                    "`{key}` belongs to the closed loop, but `{open_key}` (line {}) makes this an \
                     open loop; use max_in_flight to bound concurrency",
                    open_at.line()
                ),
            ));
        }
    }
    Ok(())
}

fn at_least_one<T: Copy + Into<u64>>(
    v: &Option<Spanned<T>>,
    key: &str,
    at: At,
) -> Result<(), ScenarioError> {
    match v {
        Some(s) if s.value.into() == 0 => Err(at(
            s.referenced,
            format!("{key} must be a whole number of at least 1, not 0"),
        )),
        _ => Ok(()),
    }
}

fn duration(s: &Spanned<String>, key: &str, at: At) -> Result<std::time::Duration, ScenarioError> {
    parse_duration(&s.value).map_err(|e| {
        at(
            s.referenced,
            format!(
                "{key} `{}` is not a duration ({e}); write e.g. 30s, 2m, 250ms",
                s.value
            ),
        )
    })
}

fn stage_list(
    s: &Spanned<String>,
    key: &str,
    at: At,
) -> Result<Vec<throng_core::Stage>, ScenarioError> {
    stages::parse(&s.value).map_err(|e| at(s.referenced, format!("{key}: {e}")))
}
