//! From flags to a validated plan: every bad value is named with its flag.

use std::time::Duration;

use throng_core::stages::parse_duration;
use throng_core::RunPlan;
use throng_http::HttpConfig;
use throng_report::Threshold;

use super::args::RunArgs;
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
    pub containers: Option<throng_run::Containers>,
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

fn positive_duration(flag: &str, v: &str) -> Result<Duration, CliError> {
    let d = duration(flag, v)?;
    if d.is_zero() {
        return Err(usage(format!(
            "{flag} {v:?}: must be longer than zero (every request would fail at once)"
        )));
    }
    Ok(d)
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
    if a.cacert.is_some() && !http.is_tls() {
        return Err(usage(format!(
            "--cacert applies to https:// targets; {} is plain http",
            a.url
        )));
    }
    http.label = a.label.clone();
    let thresholds = a.run.thresholds(&[http.label()])?;
    let containers = containers(a)?;
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
    if a.streams() == 0 {
        return Err(usage("--streams must be at least 1"));
    }
    http.streams = a.streams();
    http.keepalive = !a.no_keepalive;
    http.timeout = positive_duration("-t/--timeout", &a.timeout)?;
    http.connect_timeout = positive_duration("--connect-timeout", &a.connect_timeout)?;
    http.insecure = a.insecure;
    http.cacert = a.cacert.clone();
    Ok(())
}

/// The containers `throng run`'s flags select (`--db-stats` reads databases through `--idle`
/// too, so it needs no container then).
pub fn containers(a: &RunArgs) -> Result<Option<throng_run::Containers>, CliError> {
    Ok(a.run.containers(&[], !a.sql.db_stats.is_empty())?)
}

/// Validates the load flags into a plan.
pub fn build_plan(a: &RunArgs) -> Result<RunPlan, CliError> {
    Ok(a.run.plan(&a.url)?)
}
