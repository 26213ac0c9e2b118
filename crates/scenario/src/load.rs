//! The file's `load:` section, checked where it is written. The command line later merges it
//! under its flags and builds the plan; by then a value has lost its place, so a bad one found
//! there would be blamed on the flag it stands in for (`-z/--duration "ten"` for a file's
//! `duration: ten`). Everything a value can get wrong on its own, and the open and the closed
//! loop mixed within the section, is therefore refused here, naming `file:line:column`, and
//! read into the typed [`Load`] (durations, stages, arrivals), so no text is left to read later.

use serde_saphyr::{Location, Spanned};
use throng_core::spec;
use throng_core::stages::{self, parse_duration};

use crate::compile::ScenarioError;
use crate::file::{Load, LoadSection, SweepSection};

/// Makes an error at a place.
pub(crate) type At<'a> = &'a dyn Fn(Location, String) -> ScenarioError;

/// The levels of a file's `load: sweep:`, checked: users, rates, or both paired rung by rung.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sweep {
    /// Users at each level (with `rate`: each rung's in-flight bound).
    pub users: Vec<u32>,
    /// Arrivals per second at each level.
    pub rate: Vec<f64>,
}

impl Sweep {
    /// The levels as `--sweep` writes them (`users=10,50`, `rate=100,500`, or the paired
    /// `users:rate=10:100,50:500`), for the command line to run as if given.
    pub fn flag(&self) -> String {
        let list = |v: Vec<String>| v.join(",");
        match (self.users.is_empty(), self.rate.is_empty()) {
            (false, true) => format!(
                "users={}",
                list(self.users.iter().map(u32::to_string).collect())
            ),
            (true, _) => format!(
                "rate={}",
                list(self.rate.iter().map(f64::to_string).collect())
            ),
            (false, false) => format!(
                "users:rate={}",
                list(
                    self.users
                        .iter()
                        .zip(&self.rate)
                        .map(|(u, r)| format!("{u}:{r}"))
                        .collect()
                )
            ),
        }
    }
}

/// Checks a `sweep:` where it is written: each ladder's values (users whole and at least 1,
/// rates above 0, none twice), and two ladders of the same length.
pub(crate) fn sweep(s: &Spanned<SweepSection>, at: At) -> Result<Sweep, ScenarioError> {
    let (users, rate) = (&s.value.users, &s.value.rate);
    let empty = |l: Location, key: &str| {
        at(
            l,
            format!("sweep: {key} is an empty list; give its levels, e.g. {key}: [100, 200]"),
        )
    };
    let mut out = Sweep::default();
    if let Some(u) = users {
        if u.value.is_empty() {
            return Err(empty(u.referenced, "users"));
        }
        for (i, v) in u.value.iter().enumerate() {
            if v.value == 0 {
                return Err(at(
                    v.referenced,
                    "sweep: users must be at least 1, not 0".into(),
                ));
            }
            // Paired with rates, users may repeat (500 at 3,000/s, then 500 at 5,000/s).
            if rate.is_none() && u.value[..i].iter().any(|w| w.value == v.value) {
                return Err(at(
                    v.referenced,
                    format!("sweep: the level of {} users is given twice", v.value),
                ));
            }
        }
        out.users = u.value.iter().map(|v| v.value).collect();
    }
    if let Some(r) = rate {
        if r.value.is_empty() {
            return Err(empty(r.referenced, "rate"));
        }
        for (i, v) in r.value.iter().enumerate() {
            if !(v.value.is_finite() && v.value > 0.0) {
                return Err(at(
                    v.referenced,
                    format!(
                        "sweep: a rate is a number of arrivals per second above 0, not {}",
                        v.value
                    ),
                ));
            }
            if users.is_none() && r.value[..i].iter().any(|w| w.value == v.value) {
                return Err(at(
                    v.referenced,
                    format!("sweep: the level of {}/s is given twice", v.value),
                ));
            }
        }
        out.rate = r.value.iter().map(|v| v.value).collect();
    }
    match (users, rate) {
        (None, None) => Err(at(
            s.referenced,
            "sweep: give its levels as users: [...], rate: [...], or both (paired, rung by rung)"
                .into(),
        )),
        (Some(u), Some(r)) if u.value.len() != r.value.len() => Err(at(
            r.referenced,
            format!(
                "sweep: users has {} levels and rate {}; paired, they move together rung by \
                 rung, so give each the same number",
                u.value.len(),
                r.value.len()
            ),
        )),
        (Some(u), Some(r)) => {
            for i in 0..u.value.len() {
                let rung = |j: usize| (u.value[j].value, r.value[j].value);
                if (0..i).any(|j| rung(j) == rung(i)) {
                    return Err(at(
                        r.value[i].referenced,
                        format!(
                            "sweep: the rung of {} users at {}/s is given twice",
                            rung(i).0,
                            rung(i).1
                        ),
                    ));
                }
            }
            Ok(out)
        }
        _ => Ok(out),
    }
}

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
    let arrivals = l
        .arrivals
        .as_ref()
        .map(|a| spec::arrivals("arrivals", &a.value).map_err(|e| at(a.referenced, e.0)))
        .transpose()?;
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
    let closed_key = closed.iter().find_map(|(k, l)| l.map(|l| (*k, l)));
    if let (None, Some((key, loc)), Some(a)) = (open, closed_key, &l.arrivals) {
        // Said, not dropped: a closed loop has no arrivals to space.
        return Err(at(
            a.referenced,
            format!(
                "`arrivals` belongs to the open loop, but `{key}` (line {}) makes this a closed \
                 loop; give rate or rate_stages to space arrivals",
                loc.line()
            ),
        ));
    }
    if let Some((open_key, open_at)) = open {
        if let Some((key, loc)) = closed_key {
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
