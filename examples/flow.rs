//! A multi-step flow built in Rust rather than YAML, with a custom step that the engine times
//! like any other, run against the embedded bank for three seconds.
//!
//!     cargo run --example flow

use std::sync::Arc;
use std::time::Duration;

use throng::core::{ClosedLoop, LoadModel, Outcome, RunPlan, Users};
use throng::report::{render_summary, RunResult};
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
                StepBuilder::post("create A", "/client/new/500").extract_json("a", "$.id").check_status(200),
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
        .step(StepBuilder::get("balance B", "/client/{{ b }}/balance").check_json("$.balance", "{{ 500 + amount }}".into()))
        .build(&throng::protocols())?;
    let driver = Arc::new(ScenarioDriver::new(scenario, &Default::default())?);
    let model = LoadModel::Closed(ClosedLoop {
        users: Users::Fixed(8),
        requests: None,
        iterations: None,
        duration: Some(Duration::from_secs(3)),
        think_time: None,
    });
    let snapshot = throng::engine::run(RunPlan::new("examples/flow.rs", model), driver).await?;
    print!("{}", render_summary(&RunResult::from_snapshot(&snapshot)));
    Ok(())
}
