//! `throng demo`: the bundled scenario against the embedded bank.

use anyhow::Context as _;
use throng_testbed::BankService;

use super::args::DemoArgs;
use super::runner::run_scenario;
use super::CliError;
use throng_cli::Outputs;

/// The bundled bank-transfer scenario, run by `throng demo`.
pub(crate) const DEMO_SCENARIO: &str = include_str!("../../scenarios/bank-transfer.yaml");

pub(crate) async fn demo(a: DemoArgs) -> Result<u8, CliError> {
    let bank = BankService::default()
        .start()
        .await
        .context("starting the demo bank")?;
    eprintln!(
        "demo: the bank service at {} (SQLite in memory), scenarios/bank-transfer.yaml against it",
        bank.url()
    );
    let mut scenario = throng_scenario::compile_str(
        DEMO_SCENARIO,
        "scenarios/bank-transfer.yaml",
        std::path::Path::new("."),
        &crate::protocols(),
    )
    .map_err(|e| CliError::Runtime(anyhow::anyhow!("the bundled scenario: {e}")))?;
    for t in &mut scenario.targets {
        t.url = bank.url();
    }
    // The demo's flags are `throng run`'s: a spec over the file's load section, as there.
    let flags = throng_core::LoadSpec {
        duration: Some(
            throng_core::spec::duration("-z/--duration", &a.duration)
                .map_err(|e| CliError::Usage(e.to_string()))?,
        ),
        rate: a.rate,
        users: a.rate.is_none().then_some(a.users),
        ..throng_core::LoadSpec::default()
    };
    let setup = super::scenario::assemble(
        scenario,
        &flags,
        "scenarios/bank-transfer.yaml",
        &[],
        &throng_core::step::ClientOptions::default(),
        None,
    )?;
    let out = Outputs {
        json: a.json,
        show: throng_cli::show(a.no_tui, false),
        ..Default::default()
    };
    let code = run_scenario(setup, out).await?.exit_code();
    let errors = bank.server_errors();
    drop(bank);
    if errors > 0 {
        eprintln!("demo: the bank answered {errors} requests with a server error");
    }
    Ok(code)
}
