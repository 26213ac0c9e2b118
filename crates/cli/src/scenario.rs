//! `throng run FILE.yaml`: a scenario file's load section merged under the flags, its steps
//! compiled into a driver, its thresholds parsed with their place in the file.

use std::path::Path;

use throng_core::RunPlan;
use throng_report::Threshold;
use throng_run::flags::parse_thresholds;
use throng_run::RunError;
use throng_scenario::{ClientOptions, ScenarioDriver};

use crate::RunArgs;

/// Whether the run's target is a scenario file rather than a URL.
pub fn is_scenario(target: &str) -> bool {
    let t = weighted(target).0.to_ascii_lowercase();
    // A URL is no file, whatever its path ends with.
    (t.ends_with(".yaml") || t.ends_with(".yml")) && !t.contains("://")
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
    pub containers: Option<throng_run::Containers>,
}

fn usage(m: impl Into<String>) -> RunError {
    RunError::Input(m.into())
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
/// variables (read through `env`) for the targets no flag named. An unknown name, a bad URL or
/// one of another protocol is a usage error naming it.
pub fn override_targets(
    a: &RunArgs,
    scenario: &mut throng_scenario::Scenario,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(), RunError> {
    let mut named = Vec::new();
    for spec in &a.targets {
        let (name, url) = spec.split_once('=').ok_or_else(|| {
            usage(format!(
                "--target {spec:?}: write NAME=URL, e.g. --target bank=http://127.0.0.1:8080"
            ))
        })?;
        let (name, url) = (name.trim(), url.trim());
        scenario
            .retarget(name, url)
            .map_err(|e| usage(format!("--target {spec:?}: {}: {e}", a.url)))?;
        named.push(name.to_string());
    }
    let names: Vec<String> = scenario.targets.iter().map(|t| t.name.clone()).collect();
    for name in names {
        if named.contains(&name) {
            continue;
        }
        let key = target_env(&name);
        if let Some(v) = env(&key) {
            scenario
                .retarget(&name, v.trim())
                .map_err(|e| usage(format!("{key}={v:?}: {e}")))?;
        }
    }
    Ok(())
}

/// Loads, validates and compiles a scenario run.
pub fn build_scenario(a: &RunArgs) -> Result<ScenarioSetup, RunError> {
    let protocols = throng_protocols::protocols();
    let scenario = if a.mix.is_empty() && weighted(&a.url).1.is_none() {
        throng_scenario::load(Path::new(&a.url), &protocols)
    } else {
        let mut parts = Vec::new();
        for spec in std::iter::once(&a.url).chain(&a.mix) {
            let (file, weight) = weighted(spec);
            if !is_scenario(file) {
                return Err(usage(format!(
                    "{spec}: a mix is of scenario files (FILE.yaml@WEIGHT), not URLs"
                )));
            }
            let weight = match weight {
                None => 1,
                Some(w) => w
                    .parse()
                    .ok()
                    .filter(|w| (1..=1_000_000).contains(w))
                    .ok_or_else(|| {
                        usage(format!(
                            "{spec}: the weight after @ is a whole number from 1 to 1000000"
                        ))
                    })?,
            };
            parts.push((Path::new(file), weight));
        }
        throng_scenario::load_mix(&parts, &protocols)
    }
    .map_err(|e| usage(e.to_string()))?;
    build_from(a, scenario)
}

/// A mix's `FILE@WEIGHT` as the file and the weight's text (`None`: no `@`).
fn weighted(spec: &str) -> (&str, Option<&str>) {
    match spec.rsplit_once('@') {
        Some((file, w)) if !file.contains("://") => (file, Some(w)),
        _ => (spec, None),
    }
}

/// Validates a run of an already compiled scenario under the flags.
pub fn build_from(
    a: &RunArgs,
    mut scenario: throng_scenario::Scenario,
) -> Result<ScenarioSetup, RunError> {
    override_targets(a, &mut scenario, |k| std::env::var(k).ok())?;
    // `--seed` over the file's: its flows' picks, and its plan's arrivals (`assemble`).
    scenario.seed = a.run.seed.or(scenario.seed);
    if a.request.body.is_some() || a.request.label.is_some() {
        return Err(usage(
            "-m, -d and --label do not apply to a scenario file: its steps say what they send",
        ));
    }
    // Which targets are TLS, and so take a CA file and a client certificate, each protocol
    // declares.
    let given = throng_core::flags::tls_refusal(
        a.request.cacert.is_some(),
        a.request.cert.is_some() || a.request.key.is_some(),
    );
    if let (Some(given), false) = (
        given,
        scenario.targets.iter().any(|t| t.protocol.is_tls(&t.url)),
    ) {
        let tls: Vec<String> = a
            .protocols
            .all()
            .iter()
            .flat_map(|p| p.protocol.tls_schemes())
            .map(|s| format!("{s}://"))
            .collect();
        return Err(usage(format!(
            "{given} TLS targets ({}); {} has none",
            tls.join(", "),
            a.url
        )));
    }
    let containers = a
        .run
        .containers(&scenario.containers, a.protocols.watches())?;
    // Each protocol adds its own options for the file's targets of it, and refuses its flags
    // that mean nothing for the file.
    let mut options = a.request.options()?;
    for p in a.protocols.all() {
        let targets = scenario
            .targets
            .iter()
            .filter(|t| p.is(&*t.protocol))
            .count();
        options = p.scenario_options(options, targets, &a.url)?;
    }
    let flows = !scenario.flows.is_empty();
    let mut setup = assemble(
        scenario,
        &a.run.spec()?,
        &a.url,
        &a.run.thresholds,
        &options,
        containers,
    )?;
    if a.run.seed.is_some() && !flows && !setup.plan.random_arrivals() {
        return Err(usage(format!(
            "--seed seeds the picks of a scenario's flows and an open loop's random arrivals \
             (poisson, gamma); {} has neither",
            a.url
        )));
    }
    // `--goodput` goes over the file's `goodput:`, as the load flags go over its `load:`.
    if a.run.goodput.is_some() {
        setup.plan.goodput = a.run.goodput()?;
    }
    for p in a.protocols.all() {
        let targets = scenario_targets(&setup, &*p.protocol);
        setup.connections += p.fit_scenario(&mut setup.plan, &a.request, targets)?;
    }
    // A mix of files runs them all: its target (the summary's, the JSON's, the dashboard's
    // header) names every one, not the first alone.
    if !a.mix.is_empty() {
        setup.plan.target = std::iter::once(&a.url)
            .chain(&a.mix)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ");
    }
    Ok(setup)
}

/// How many of a scenario's targets speak `protocol`.
fn scenario_targets(
    setup: &ScenarioSetup,
    protocol: &dyn throng_core::step::StepProtocol,
) -> usize {
    setup
        .driver
        .scenario()
        .targets
        .iter()
        .filter(|t| throng_core::step::same_protocol(&*t.protocol, protocol))
        .count()
}

/// A scenario run from its parts: `flags` over the file's load section (messages name them as
/// the command line does), the file's thresholds then `thresholds`, a client per target with
/// `options`. `throng run FILE` and `throng demo` both end here.
pub fn assemble(
    scenario: throng_scenario::Scenario,
    flags: &throng_core::LoadSpec,
    source: &str,
    extra: &[String],
    options: &ClientOptions,
    containers: Option<throng_run::Containers>,
) -> Result<ScenarioSetup, RunError> {
    let mut labels: Vec<String> = scenario.steps.iter().map(|s| s.label.clone()).collect();
    labels.extend(scenario.groups.iter().map(|g| g.label.clone()));
    let file_thresholds = scenario.thresholds.clone();
    let driver = ScenarioDriver::new(scenario, options).map_err(|e| usage(e.to_string()))?;
    // Server streams' `(messages)` rows take thresholds too.
    labels.extend(
        throng_core::Driver::parts(&driver)
            .into_iter()
            .map(|p| p.label),
    );
    let mut thresholds = Vec::new();
    for (text, place) in &file_thresholds {
        thresholds.extend(parse_thresholds(
            std::slice::from_ref(text),
            &format!("{place}: threshold"),
            &labels,
        )?);
    }
    let mut plan = flags
        .over(&driver.scenario().load)
        .plan(source, &crate::flags::flag)
        .map_err(|e| usage(format!("{e} (load from {source} and the flags)")))?;
    plan.goodput = driver.scenario().goodput.clone();
    plan.seed = driver.scenario().seed;
    thresholds.extend(parse_thresholds(extra, "--threshold", &labels)?);
    let connections =
        (plan.peak_concurrency() as f64 * driver.connections_per_user()).ceil() as u64;
    // The file's `load: start` is the plan's (`RunPlan::start`), which the run waits for.
    Ok(ScenarioSetup {
        plan,
        driver,
        thresholds,
        connections,
        containers,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use throng_core::step::{
        Client, ClientOptions, Node, Protocol, Protocols, Render, Reply, StepError,
        TemplateCompiler,
    };
    use throng_core::{Outcome, Status};

    use super::*;

    /// A protocol of this test's own: `plain://` and `sealed://` targets, the second declared
    /// TLS, a scheme no list of throng's names.
    struct Vault;

    impl Protocol for Vault {
        type Client = Vault;

        fn name(&self) -> &'static str {
            "vault"
        }

        fn schemes(&self) -> &'static [&'static str] {
            &["plain", "sealed"]
        }

        const TLS_SCHEMES: &'static [&'static str] = &["sealed"];

        fn key(&self) -> &'static str {
            "vault"
        }

        fn check_target(&self, _url: &str) -> Result<(), String> {
            Ok(())
        }

        fn compile(&self, _: &Node, _: &mut dyn TemplateCompiler) -> Result<(), StepError> {
            Ok(())
        }

        fn status(&self, _: &Node) -> Result<Status, StepError> {
            Ok(Status::default())
        }

        fn client(&self, _url: &str, _options: &ClientOptions) -> Result<Vault, String> {
            Ok(Vault)
        }
    }

    impl Client for Vault {
        type Step = ();
        type Worker = ();
        type Session = ();

        fn worker_of(&self, _index: usize, _workers: usize) {}

        fn session(&self, _worker: &(), _user: u64) {}

        async fn call(
            &self,
            _: &mut (),
            _: &(),
            _: &dyn Render,
            _: bool,
        ) -> (Outcome, Option<Reply>) {
            (Outcome::default(), None)
        }
    }

    /// `throng run FILE --cacert ca.pem` of a file whose one target is `url`.
    fn with_cacert(url: &str) -> Result<ScenarioSetup, RunError> {
        with_flags(url, &["--cacert", "ca.pem"])
    }

    /// `throng run FILE FLAGS` of a file whose one target is `url`.
    fn with_flags(url: &str, flags: &[&str]) -> Result<ScenarioSetup, RunError> {
        let text = format!(
            "targets:\n  v: {url}\nload:\n  users: 1\n  iterations: 1\nsteps:\n  - label: open\n    vault: {{}}\n"
        );
        let protocols = Protocols::new().with(Vault);
        let scenario =
            throng_scenario::compile_str(&text, "v.yaml", Path::new("."), &protocols).unwrap();
        let args = ["throng run", "v.yaml"].iter().chain(flags);
        let a = RunArgs::try_parse_from(args).unwrap();
        build_from(&a, scenario)
    }

    /// Whether a target takes `--cacert` is its protocol's declaration: a scheme of its
    /// `TLS_SCHEMES` does, its other schemes do not, and the refusal names the TLS schemes
    /// throng's protocols declare.
    #[test]
    fn cacert_goes_to_the_targets_their_protocol_declares_tls() {
        let setup = with_cacert("sealed://127.0.0.1:1").unwrap();
        assert_eq!(setup.driver.scenario().targets.len(), 1);
        let refused = with_cacert("plain://127.0.0.1:1")
            .err()
            .unwrap()
            .to_string();
        assert!(
            refused.starts_with("--cacert applies to TLS targets (https://, ")
                && refused.ends_with("); v.yaml has none"),
            "{refused}"
        );
        for tls in ["tcps://", "wss://", "tls://"] {
            assert!(refused.contains(tls), "{refused}");
        }
        #[cfg(feature = "grpc")]
        assert!(refused.contains("grpcs://"), "{refused}");
    }

    /// `--cert` and `--key` go to TLS targets as `--cacert` does, and only together.
    #[test]
    fn a_client_certificate_goes_to_tls_targets_with_its_key() {
        let both = ["--cert", "c.pem", "--key", "k.pem"];
        let setup = with_flags("sealed://127.0.0.1:1", &both).unwrap();
        assert_eq!(setup.driver.scenario().targets.len(), 1);
        let refused = with_flags("plain://127.0.0.1:1", &both)
            .err()
            .unwrap()
            .to_string();
        assert!(
            refused.starts_with("--cert and --key apply to TLS targets (https://, ")
                && refused.ends_with("); v.yaml has none"),
            "{refused}"
        );
        let alone = with_flags("sealed://127.0.0.1:1", &["--cert", "c.pem"])
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            alone,
            "--cert and --key go together (the client certificate and its private key); \
             --cert is given without --key"
        );
    }

    /// Each registered protocol's TLS schemes are among its schemes (a URL of one finds it).
    #[test]
    fn every_tls_scheme_is_a_scheme_of_its_protocol() {
        for r in crate::registrations() {
            let p = &r.protocol;
            for tls in p.tls_schemes() {
                assert!(p.schemes().contains(tls), "{}: {tls}", p.name());
                assert!(p.is_tls(&format!("{}://h", tls.to_uppercase())));
            }
        }
    }
}
