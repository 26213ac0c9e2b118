//! From flags to a validated plan: every bad value is named with its flag.

use std::time::Duration;

use std::sync::Arc;
use throng_core::stages::parse_duration;
use throng_core::RunPlan;

use throng_http::{HttpConfig, PerCall};
use throng_report::Threshold;
use throng_scenario::template::Calls;

use super::args::RunArgs;
use super::CliError;

/// Everything `throng run` needs, validated.
#[derive(Debug, Clone)]
pub struct RunSetup {
    /// The load plan.
    pub plan: RunPlan,
    /// The HTTP request.
    pub http: HttpConfig,
    /// The parts of the request that are templates, rendered per call, if any.
    pub per_call: Option<(PerCall, Arc<Calls>)>,
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
    let mut calls = Calls::default();
    let mut per_call = PerCall::default();
    // A templated path is no URI yet: the configuration gets `/`, the step the template.
    let (url, path) = match split_path(&a.url) {
        Some((base, path)) if path.contains("{{") || path.contains("{%") => {
            let text = calls
                .compile(path)
                .map_err(|e| usage(format!("{}: the path's template: {e}", a.url)))?;
            per_call.path = Some(text);
            (format!("{base}/"), Some(path))
        }
        _ => (a.url.clone(), None),
    };
    let mut http = HttpConfig::new(&url).map_err(|e| usage(e.to_string()))?;
    http.method = a
        .method
        .to_uppercase()
        .parse()
        .map_err(|_| usage(format!("-m/--method {:?}: not an HTTP method", a.method)))?;
    for h in &a.headers {
        match h.split_once(':') {
            Some((name, value)) if value.contains("{{") || value.contains("{%") => {
                let name = name.trim().parse().map_err(|_| {
                    usage(format!("-H {h:?}: `{}` is not a header name", name.trim()))
                })?;
                let text = calls
                    .compile(value.trim())
                    .map_err(|e| usage(format!("-H {h:?}: {e}")))?;
                per_call.headers.push((name, text));
            }
            _ => http.header(h).map_err(|e| usage(format!("-H {e}")))?,
        }
    }
    if let Some(body) = &a.body {
        http.body = match body.strip_prefix('@') {
            Some(path) => std::fs::read(path)
                .map_err(|e| usage(format!("-d @{path}: cannot read the file: {e}")))?
                .into(),
            None => body.clone().into_bytes().into(),
        };
        // Bytes that are not text (a file's) are sent as they are.
        if let Ok(text) = std::str::from_utf8(&http.body) {
            if text.contains("{{") || text.contains("{%") {
                let t = calls
                    .compile(text)
                    .map_err(|e| usage(format!("-d/--body's template: {e}")))?;
                per_call.body = Some(t);
            }
        }
    }
    apply_transport(a, &mut http)?;
    if a.cacert.is_some() && !http.is_tls() {
        return Err(usage(format!(
            "--cacert applies to https:// targets; {} is plain http",
            a.url
        )));
    }
    http.label = a.label.clone();
    if let (None, Some(path)) = (&a.label, path) {
        http.label = Some(format!("{} {}", http.method, path));
    }
    let thresholds = a.run.thresholds(&[http.label()])?;
    let containers = containers(a)?;
    let templated = per_call.path.is_some() || per_call.body.is_some();
    let per_call = (templated || !per_call.headers.is_empty()).then(|| (per_call, Arc::new(calls)));
    Ok(RunSetup {
        plan,
        http,
        per_call,
        thresholds,
        containers,
    })
}

/// A URL split before its path (`http://host:8080`, `/a/b?c`), if it has one.
fn split_path(url: &str) -> Option<(&str, &str)> {
    let after = url.find("://")? + 3;
    let slash = after + url[after..].find('/')?;
    Some(url.split_at(slash))
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
