//! From flags to a validated plan: every bad value is named with its flag.

use std::time::Duration;

use throng_core::stages::{self, parse_duration};
use throng_core::{Arrivals, ClosedLoop, LoadModel, OpenLoop, Rate, RunPlan, Users};
use throng_http::HttpConfig;
use throng_report::Threshold;

use super::args::{ArrivalsArg, RunArgs};
use super::CliError;

/// Everything `throng run` needs, validated.
#[derive(Debug, Clone)]
pub struct RunSetup {
    /// The load plan.
    pub plan: RunPlan,
    /// The HTTP request.
    pub http: HttpConfig,
    /// Pass/fail conditions.
    pub thresholds: Vec<Threshold>,
    /// The target's containers to watch, if any.
    pub containers: Option<super::containers::Watch>,
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::Usage(msg.into())
}

fn duration(flag: &str, v: &str) -> Result<Duration, CliError> {
    parse_duration(v).map_err(|e| {
        usage(format!(
            "{flag} {v:?}: not a duration ({e}); write e.g. 30s, 2m, 250ms"
        ))
    })
}

/// Validates `throng run` flags into a plan, a driver configuration and thresholds.
pub fn build(a: &RunArgs) -> Result<RunSetup, CliError> {
    let plan = build_plan(a)?;
    let mut http = HttpConfig::new(&a.url).map_err(|e| usage(e.to_string()))?;
    http.method = a
        .method
        .to_uppercase()
        .parse()
        .map_err(|_| usage(format!("-m/--method {:?}: not an HTTP method", a.method)))?;
    for h in &a.headers {
        http.header(h).map_err(|e| usage(format!("-H {e}")))?;
    }
    if let Some(body) = &a.body {
        http.body = match body.strip_prefix('@') {
            Some(path) => std::fs::read(path)
                .map_err(|e| usage(format!("-d @{path}: cannot read the file: {e}")))?
                .into(),
            None => body.clone().into_bytes().into(),
        };
    }
    apply_transport(a, &mut http)?;
    http.label = a.label.clone();
    let thresholds = parse_thresholds(&a.thresholds, "--threshold", &[http.label()])?;
    let containers =
        super::containers::watch_from(&a.containers, &a.container_labels, a.idle.as_deref())?;
    Ok(RunSetup {
        plan,
        http,
        thresholds,
        containers,
    })
}

/// Sets the transport flags (HTTP/2, keep-alive, timeouts, TLS) on a target's configuration.
pub fn apply_transport(a: &RunArgs, http: &mut HttpConfig) -> Result<(), CliError> {
    http.http2 = a.http2;
    if a.streams == 0 {
        return Err(usage("--streams must be at least 1"));
    }
    http.streams = a.streams;
    http.keepalive = !a.no_keepalive;
    http.timeout = duration("-t/--timeout", &a.timeout)?;
    http.connect_timeout = duration("--connect-timeout", &a.connect_timeout)?;
    http.insecure = a.insecure;
    http.cacert = a.cacert.clone();
    Ok(())
}

/// Parses thresholds; a label must name one of `labels`. `place` prefixes messages.
pub fn parse_thresholds(
    list: &[String],
    place: &str,
    labels: &[String],
) -> Result<Vec<Threshold>, CliError> {
    let thresholds = list
        .iter()
        .map(|t| {
            t.parse::<Threshold>()
                .map_err(|e| usage(format!("{place} {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    for t in &thresholds {
        if let Some(l) = &t.label {
            if !labels.contains(l) {
                return Err(usage(format!(
                    "{place} `{}`: no step or group is labelled {l:?} (the labels are {labels:?})",
                    t.text
                )));
            }
        }
    }
    Ok(thresholds)
}

/// Validates the load flags into a plan.
pub fn build_plan(a: &RunArgs) -> Result<RunPlan, CliError> {
    let dur = a
        .duration
        .as_deref()
        .map(|d| duration("-z/--duration", d))
        .transpose()?;
    if dur == Some(Duration::ZERO) {
        return Err(usage("-z/--duration must be longer than zero"));
    }
    let open = a.rate.is_some() || a.rate_stages.is_some();
    if open && (a.iterations.is_some() || a.think_time.is_some() || a.users.is_some()) {
        return Err(usage(
            "-q/--rate and --rate-stages make an open loop; -c, -i and --think-time belong to the closed loop \
             (use --max-in-flight to bound concurrency)",
        ));
    }
    let model = if open {
        let rate = match (&a.rate_stages, a.rate) {
            (Some(s), start) => Rate::Stages {
                // A NaN start made the open loop's schedule panic in a worker, and the run hang.
                start: match start.unwrap_or(0.0) {
                    r if r >= 0.0 && r.is_finite() => r,
                    r => {
                        return Err(usage(format!(
                            "-q/--rate {r}: the rate --rate-stages starts from must be a number, zero or more"
                        )))
                    }
                },
                stages: stages::parse(s).map_err(|e| usage(format!("--rate-stages {s:?}: {e}")))?,
            },
            (None, Some(r)) => {
                if !(r > 0.0 && r.is_finite()) {
                    return Err(usage(format!(
                        "-q/--rate {r}: must be a positive number of requests per second"
                    )));
                }
                Rate::Constant(r)
            }
            (None, None) => unreachable_rate()?,
        };
        if matches!(rate, Rate::Constant(_)) && dur.is_none() && a.requests.is_none() {
            return Err(usage(
                "an open-loop run needs an end: give -z/--duration or -n/--requests",
            ));
        }
        let max_in_flight = a.max_in_flight.unwrap_or(1000);
        if max_in_flight == 0 {
            return Err(usage("--max-in-flight must be at least 1"));
        }
        LoadModel::Open(OpenLoop {
            rate,
            arrivals: match a.arrivals.unwrap_or(ArrivalsArg::Even) {
                ArrivalsArg::Even => Arrivals::Even,
                ArrivalsArg::Poisson => Arrivals::Poisson,
            },
            max_in_flight,
            queue: a.queue.unwrap_or(max_in_flight),
            requests: a.requests,
            duration: dur,
        })
    } else {
        let users = match &a.user_stages {
            Some(s) => Users::Stages(
                stages::parse(s).map_err(|e| usage(format!("--user-stages {s:?}: {e}")))?,
            ),
            None => {
                let n = a.users.unwrap_or(50);
                if n == 0 {
                    return Err(usage("-c/--users must be at least 1"));
                }
                Users::Fixed(n)
            }
        };
        if let Users::Stages(s) = &users {
            if s.iter().any(|s| s.target.fract() != 0.0) {
                return Err(usage("--user-stages: user counts must be whole numbers"));
            }
        }
        if a.requests == Some(0) || a.iterations == Some(0) {
            return Err(usage(
                "-n/--requests and -i/--iterations must be at least 1",
            ));
        }
        let think_time = a
            .think_time
            .as_deref()
            .map(|t| duration("--think-time", t))
            .transpose()?;
        if matches!(users, Users::Fixed(_))
            && dur.is_none()
            && a.requests.is_none()
            && a.iterations.is_none()
        {
            // Like oha and wrk, a bare run has an end: 200 requests per user is too little; 10 s is usual.
            return Err(usage("the run needs an end: give -n/--requests, -z/--duration, -i/--iterations or --user-stages"));
        }
        LoadModel::Closed(ClosedLoop {
            users,
            requests: a.requests,
            iterations: a.iterations,
            duration: dur,
            think_time,
        })
    };
    let mut plan = RunPlan::new(a.url.clone(), model);
    plan.threads = a.threads.unwrap_or(0);
    plan.grace = duration("--grace", &a.grace)?;
    plan.late_after = duration("--late-after", &a.late_after)?;
    plan.validate().map_err(|e| usage(e.to_string()))?;
    Ok(plan)
}

fn unreachable_rate() -> Result<Rate, CliError> {
    Err(usage("an open loop needs -q/--rate or --rate-stages"))
}
