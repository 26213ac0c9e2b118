//! `throng run FILE.yaml`: a scenario file's load section merged under the flags, its steps
//! compiled into a driver, its thresholds parsed with their place in the file.

use std::path::Path;

use throng_core::RunPlan;
use throng_http::HttpConfig;
use throng_report::Threshold;
use throng_scenario::{file::Load, ScenarioDriver};

use super::args::{ArrivalsArg, RunArgs};
use super::plan::{apply_transport, build_plan, parse_thresholds};
use super::CliError;

/// Whether the run's target is a scenario file rather than a URL.
pub fn is_scenario(target: &str) -> bool {
    let t = target.to_ascii_lowercase();
    (t.ends_with(".yaml") || t.ends_with(".yml"))
        && !t.starts_with("http://")
        && !t.starts_with("https://")
}

/// A validated scenario run.
pub struct ScenarioSetup {
    /// The load plan (file, then flags over it).
    pub plan: RunPlan,
    /// The compiled scenario.
    pub driver: ScenarioDriver,
    /// The file's thresholds, then the flags'.
    pub thresholds: Vec<Threshold>,
    /// Connections the run may need (for the open-file check).
    pub connections: u64,
    /// Containers to watch: the file's `containers`, then `--container` and `--container-label`.
    pub containers: Option<super::containers::Watch>,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// Fills the flags the user did not give from the file's load section. Flags win by group: a
/// model flag (-c, --user-stages, -q, --rate-stages) replaces the file's model, and an end flag
/// (-n, -z, -i) replaces the file's ends.
pub fn merge_load(a: &RunArgs, load: &Load) -> Result<RunArgs, CliError> {
    let mut m = a.clone();
    if a.users.is_none() && a.user_stages.is_none() && a.rate.is_none() && a.rate_stages.is_none() {
        m.users = load.users;
        m.user_stages = load.user_stages.clone();
        m.rate = load.rate;
        m.rate_stages = load.rate_stages.clone();
    }
    if a.requests.is_none() && a.duration.is_none() && a.iterations.is_none() {
        m.requests = load.requests;
        m.duration = load.duration.clone();
        m.iterations = load.iterations;
    }
    let open = m.rate.is_some() || m.rate_stages.is_some();
    if open {
        m.iterations = None;
    } else {
        m.think_time = m.think_time.or_else(|| load.think_time.clone());
    }
    if a.users.is_none() {
        // `-c` with `-q` bounds the requests in flight itself.
        m.max_in_flight = m.max_in_flight.or(load.max_in_flight);
    }
    m.queue = m.queue.or(load.queue);
    if m.arrivals.is_none() {
        m.arrivals = match load.arrivals.as_deref() {
            None => None,
            Some("even") => Some(ArrivalsArg::Even),
            Some("poisson") => Some(ArrivalsArg::Poisson),
            Some(other) => {
                return Err(usage(format!(
                    "{}: load.arrivals `{other}` is not even or poisson",
                    a.url
                )))
            }
        };
    }
    Ok(m)
}

/// The environment variable that overrides target `name`: `THRONG_TARGET_` and the name in upper
/// case, with every other character than a letter or a digit as `_`.
pub fn target_env(name: &str) -> String {
    let key: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("THRONG_TARGET_{key}")
}

/// Points a scenario's targets elsewhere: `--target NAME=URL` flags, then `THRONG_TARGET_<NAME>`
/// variables (read through `env`) for the targets no flag named. An unknown name or a bad URL is
/// a usage error naming it.
pub fn override_targets(
    a: &RunArgs,
    targets: &mut [(String, String)],
    env: impl Fn(&str) -> Option<String>,
) -> Result<(), CliError> {
    let names: Vec<String> = targets.iter().map(|(n, _)| n.clone()).collect();
    let check = |what: &str, url: &str| {
        HttpConfig::new(url)
            .map(drop)
            .map_err(|e| usage(format!("{what}: {e}")))
    };
    let mut named = Vec::new();
    for spec in &a.targets {
        let (name, url) = spec.split_once('=').ok_or_else(|| {
            usage(format!(
                "--target {spec:?}: write NAME=URL, e.g. --target bank=http://127.0.0.1:8080"
            ))
        })?;
        let (name, url) = (name.trim(), url.trim());
        let slot = targets.iter_mut().find(|(n, _)| n == name).ok_or_else(|| {
            usage(format!(
                "--target {spec:?}: {} has no target named {name:?} (its targets are {names:?})",
                a.url
            ))
        })?;
        check(&format!("--target {spec:?}"), url)?;
        slot.1 = url.to_string();
        named.push(name.to_string());
    }
    for (name, url) in targets.iter_mut() {
        if named.contains(name) {
            continue;
        }
        let key = target_env(name);
        if let Some(v) = env(&key) {
            check(&format!("{key}={v:?}"), v.trim())?;
            *url = v.trim().to_string();
        }
    }
    Ok(())
}

/// Loads, validates and compiles a scenario run.
pub fn build_scenario(a: &RunArgs) -> Result<ScenarioSetup, CliError> {
    let scenario = throng_scenario::load(Path::new(&a.url)).map_err(|e| usage(e.to_string()))?;
    build_from(a, scenario)
}

/// Validates a run of an already compiled scenario under the flags.
pub fn build_from(
    a: &RunArgs,
    mut scenario: throng_scenario::Scenario,
) -> Result<ScenarioSetup, CliError> {
    override_targets(a, &mut scenario.targets, |k| std::env::var(k).ok())?;
    if a.body.is_some() || !a.method.eq_ignore_ascii_case("GET") || a.label.is_some() {
        return Err(usage(
            "-m, -d and --label do not apply to a scenario file: its steps say what they send",
        ));
    }
    let mut labels: Vec<String> = scenario.steps.iter().map(|s| s.label.clone()).collect();
    labels.extend(scenario.groups.iter().map(|g| g.label.clone()));
    let mut thresholds = Vec::new();
    for (text, place) in &scenario.thresholds {
        thresholds.extend(parse_thresholds(
            std::slice::from_ref(text),
            &format!("{place}:"),
            &labels,
        )?);
    }
    let merged = merge_load(a, &scenario.load)?;
    let mut plan = build_plan(&merged).map_err(|e| match e {
        CliError::Usage(m) => usage(format!("{} (load from {} and the flags)", m, a.url)),
        other => other,
    })?;
    plan.target = a.url.clone();
    thresholds.extend(parse_thresholds(&a.thresholds, "--threshold", &labels)?);
    // Check the transport flags once, then apply them to every target.
    let mut probe = HttpConfig::new("http://127.0.0.1/").map_err(|e| usage(e.to_string()))?;
    apply_transport(a, &mut probe)?;
    if a.cacert.is_some()
        && !scenario
            .targets
            .iter()
            .any(|(_, u)| u.starts_with("https://"))
    {
        return Err(usage(format!(
            "--cacert applies to https:// targets; {} has none",
            a.url
        )));
    }
    for h in &a.headers {
        probe.header(h).map_err(|e| usage(format!("-H {e}")))?;
    }
    let mut names = scenario.containers.clone();
    names.extend(a.containers.iter().cloned());
    let containers = super::containers::watch_from(&names, &a.container_labels, a.idle.as_deref())?;
    let targets = scenario.targets.len().max(1) as u64;
    let driver = ScenarioDriver::new(scenario, |cfg| {
        cfg.http2 = probe.http2;
        cfg.streams = probe.streams;
        cfg.keepalive = probe.keepalive;
        cfg.timeout = probe.timeout;
        cfg.connect_timeout = probe.connect_timeout;
        cfg.insecure = probe.insecure;
        cfg.cacert = probe.cacert.clone();
        cfg.headers = probe.headers.clone();
    })
    .map_err(|e| usage(format!("{}: {e}", a.url)))?;
    let per_target = match probe.http2 {
        true => plan.peak_concurrency().div_ceil(probe.streams as u64),
        false => plan.peak_concurrency(),
    };
    Ok(ScenarioSetup {
        plan,
        driver,
        thresholds,
        connections: per_target * targets,
        containers,
    })
}
