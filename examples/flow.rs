//! A multi-step flow built in Rust rather than YAML, with a custom step that the engine times
//! like any other, run against the embedded bank for three seconds through the library's
//! `Run`: thresholds, the summary and a JSON result, and the exit code, with no command line.
//!
//!     cargo run --example flow [RESULT.json]

use std::sync::Arc;

use throng::core::{LoadSpec, Outcome};
use throng::scenario::{Builder, ScenarioDriver, StepBuilder};
use throng::testbed::BankService;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bank = BankService::default().start().await?;
    let scenario = Builder::new()
        .target("bank", &bank.url())
        .variable("amount", serde_json::json!(25))
        .group(
            "open accounts",
            vec![
                StepBuilder::post("create A", "/client/new/500")
                    .extract_json("a", "$.id")
                    .extract_header("kind", "content-type")
                    .check_status(200),
                StepBuilder::post("create B", "/client/new/500").extract_json("b", "$.id").check_status(200),
            ],
        )
        // A custom step: any async Rust, timed by the engine like a request.
        .custom("pick amount", |mut vars| async move {
            let a = vars.get("a").and_then(|v| v.as_i64()).unwrap_or(0);
            vars.insert("amount".into(), serde_json::json!(10 + a % 7));
            (vars, Outcome::default())
        })
        .step(
            StepBuilder::post("transfer", "/transaction")
                .json(serde_json::json!({"from": "{{ a }}", "to": "{{ b }}", "amount": "{{ amount }}"}))
                .check_status(200),
        )
        .step(
            StepBuilder::get("balance B", "/client/{{ b }}/balance")
                .check_body_contains("balance")
                .check_json("$.balance", "{{ 500 + amount }}".into()),
        )
        // A failed step does not skip the rest of its iteration.
        .continue_on_failure()
        .build(&throng::protocols())?;
    let driver = Arc::new(ScenarioDriver::new(scenario, &Default::default())?);
    let spec = LoadSpec {
        users: Some(8),
        duration: Some(std::time::Duration::from_secs(3)),
        ..LoadSpec::default()
    };
    let plan = spec.plan("examples/flow.rs", &throng::core::spec::keys)?;
    let mut run = throng::Run::new(plan, driver)
        .thresholds(["p99<500ms".parse()?, "error_rate<1%".parse()?])
        .summary(true)
        .messages(true);
    if let Some(path) = std::env::args().nth(1) {
        run = run.json(path);
    }
    let finished = run.execute().await?;
    std::process::exit(finished.exit_code().into());
}
