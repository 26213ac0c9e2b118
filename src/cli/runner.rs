//! Running commands: the glue between the validated setup, the engine, signals and outputs.

use std::sync::Arc;

use throng_http::HttpDriver;
use throng_report::Threshold;

use super::args::{Command, RunArgs};
use super::output::progress;
pub use super::output::{check_writable, finish, progress_line};
use super::plan::{build, RunSetup};
pub use super::serve::DEMO_SCENARIO;
use super::serve::{demo, serve};
use super::signals::stop_on_signal;
use super::{Cli, CliError};

/// Where a run's outputs go.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The JSON result file.
    pub json: Option<std::path::PathBuf>,
    /// No progress line.
    pub quiet: bool,
    /// Show the live dashboard instead of the progress line (see [`super::live::wanted`]).
    pub tui: bool,
    /// Reports to write besides the JSON (`--report FORMAT:FILE`), checked before the load.
    pub reports: Vec<(throng_report::Format, std::path::PathBuf)>,
    /// Where the result goes besides (the runs of an A/B comparison).
    pub keep: Option<std::sync::Arc<std::sync::Mutex<Vec<throng_report::RunResult>>>>,
    /// Said before the target in the dashboard and the result (`go, round 2 of 3`).
    pub title: Option<String>,
    /// Every request as a line of JMeter's JTL in this file (`--samples`).
    pub samples: Option<std::path::PathBuf>,
    /// The share of the plan this process runs (`--shard`).
    pub shard: throng_core::Shard,
    /// When the load starts (`--start-at`): every shard waits for the same instant.
    pub start_at: Option<std::time::SystemTime>,
    /// Databases whose own counters go into the result (`--db-stats`).
    pub databases: Option<std::sync::Arc<super::sql::DbWatch>>,
}

/// Runs a parsed command line and returns its exit code.
pub async fn execute(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Command::Run(a) => {
            let out = Outputs::of(&a)?;
            match super::ab::sides(&a)? {
                Some(_) if !a.sql.db_stats.is_empty() => Err(CliError::Usage(
                    "--db-stats reads one database around one load: not with A/B sides".into(),
                )),
                Some(sides) => super::ab::run(&a, sides, out).await,
                None => super::sql::with_db_stats(&a, out, |out| run_once(&a, out)).await,
            }
        }
        Command::Demo(a) => demo(a).await,
        Command::Compare(a) => super::compare::run_compare(&a),
        Command::Report(a) => super::compare::run_report(&a),
        Command::Merge(a) => super::merge::run_merge(&a),
        Command::Serve(a) => serve(a).await,
        Command::Sql(a) => super::sql::command(a).await,
    }
}

impl Outputs {
    /// The outputs `throng run`'s flags ask for; `--report` specs are checked now.
    pub fn of(a: &RunArgs) -> Result<Outputs, CliError> {
        Ok(Outputs {
            json: a.json.clone(),
            quiet: a.quiet,
            tui: super::live::wanted(a.no_tui),
            reports: super::compare::parse_report_specs(&a.reports)?,
            samples: a.samples.clone(),
            shard: super::shards::shard(a, &|k| std::env::var(k).ok())?,
            start_at: super::shards::start_at(a)?,
            ..Outputs::default()
        })
    }
}

/// One run of `throng run`: a scenario file, or a URL whose scheme picks the protocol.
pub async fn run_once(a: &RunArgs, out: Outputs) -> Result<u8, CliError> {
    if super::scenario::is_scenario(&a.url) {
        let setup = super::scenario::build_scenario(a)?;
        return run_scenario(setup, out).await;
    }
    if !a.targets.is_empty() {
        return Err(CliError::Usage(format!(
            "--target names a scenario file's targets; {} is a URL",
            a.url
        )));
    }
    // The URL's scheme picks the protocol (`throng::protocols()`); a URL no protocol
    // claims goes to HTTP's checks, which say what is wrong with it.
    let protocols = crate::protocols();
    let protocol = protocols.for_url(&a.url).map(|p| p.name());
    if a.grpc.connections.is_some() && protocol != Some("grpc") {
        return Err(CliError::Usage(format!(
            "--connections applies to grpc:// targets; {} is not one (HTTP/1.1 opens a \
             connection per user: -c; HTTP/2 shares one among --streams users)",
            a.url
        )));
    }
    match protocol {
        Some("grpc") => return super::grpc::run(a, out).await,
        Some("sql") => return super::sql::run(a, out).await,
        Some("http") | None => {}
        Some(other) => {
            return Err(CliError::Usage(format!(
                "{}: {other} targets run from scenario files for now ({})",
                a.url,
                protocols.schemes()
            )))
        }
    }
    let setup = build(a)?;
    run_http(setup, out).await
}

/// Raises the open-file limit to the hard limit and checks that `connections` fit under it.
pub fn ensure_open_files(connections: u64) -> Result<u64, CliError> {
    let limit = rlimit::increase_nofile_limit(u64::MAX).unwrap_or(1024);
    let need = connections + 64;
    if need > limit {
        return Err(CliError::Usage(format!(
            "{connections} connections need about {need} open files, but the open-file limit is {limit} \
             (already raised to the hard limit): lower -c/--max-in-flight, or raise the hard limit (ulimit -Hn)"
        )));
    }
    Ok(limit)
}

/// Runs an HTTP load to its end, prints the summary and writes the result.
pub async fn run_http(setup: RunSetup, out: Outputs) -> Result<u8, CliError> {
    let conns = match setup.http.http2 {
        true => setup
            .plan
            .peak_concurrency()
            .div_ceil(setup.http.streams as u64),
        false => setup.plan.peak_concurrency(),
    };
    ensure_open_files(conns)?;
    let driver = HttpDriver::new(setup.http.clone()).map_err(|e| CliError::Usage(e.to_string()))?;
    let watch = setup.containers.as_ref();
    run_load(setup.plan, Arc::new(driver), &setup.thresholds, watch, out).await
}

/// Runs a scenario file to its end, prints the summary and writes the result.
pub async fn run_scenario(
    setup: super::scenario::ScenarioSetup,
    out: Outputs,
) -> Result<u8, CliError> {
    ensure_open_files(setup.connections)?;
    run_load(
        setup.plan,
        Arc::new(setup.driver),
        &setup.thresholds,
        setup.containers.as_ref(),
        out,
    )
    .await
}

/// Runs any driver under a plan: containers, signals, live UI or progress line, then the summary.
pub async fn run_load<D: throng_core::Driver>(
    mut plan: throng_core::RunPlan,
    driver: Arc<D>,
    thresholds: &[Threshold],
    containers: Option<&super::containers::Watch>,
    out: Outputs,
) -> Result<u8, CliError> {
    if let Some(title) = &out.title {
        plan.target = format!("{title}: {}", plan.target);
    }
    plan.shard = out.shard;
    // A result that cannot be written is found out now, not after the whole run.
    if let Some(path) = &out.json {
        check_writable(path)?;
    }
    // Containers are resolved (and sampled idle) before any load; an unknown one stops here.
    let mut sampling = None;
    let mut extras = throng_engine::Extras::default();
    if let Some(watch) = containers {
        let (s, events) = super::containers::start(watch, out.quiet).await?;
        sampling = Some(s);
        extras.containers = Some(events);
    }
    if let Some(s) = &mut sampling {
        s.load_starts_now();
    }
    if let Some(dbs) = &out.databases {
        extras.databases = dbs.load_starts_now().await;
    }
    let mut samples = None;
    if let Some(path) = &out.samples {
        let file = super::samples::Samples::create(path)?;
        let (tx, rx) = super::samples::Samples::channel();
        extras.samples = Some(tx);
        samples = Some((file, rx));
    }
    if let Some(at) = out.start_at {
        super::shards::wait_until(at, out.quiet).await;
    }
    let handle = throng_engine::start_with(plan, driver, extras)
        .await
        .map_err(|e| match e {
            throng_engine::EngineError::Setup(_) | throng_engine::EngineError::Thread(_) => {
                CliError::Runtime(anyhow::anyhow!(e))
            }
            other => CliError::Usage(other.to_string()),
        })?;
    let writer = samples.map(|(file, rx)| file.spawn(rx, &handle.snapshots().borrow()));
    let signals = tokio::spawn(stop_on_signal(handle.stop_token(), handle.abort_token()));
    let mut headless = None;
    let mut snapshot = if out.tui {
        super::live::show(handle).await.snapshot
    } else {
        headless = (!out.quiet).then(|| tokio::spawn(progress(handle.snapshots())));
        handle.wait().await
    };
    if let Some(s) = sampling.take() {
        if s.dropped() > 0 {
            eprintln!(
                "warning: {} container readings were dropped (the run was too busy to take them)",
                s.dropped()
            );
        }
    }
    signals.abort();
    if let Some(p) = headless {
        p.abort();
    }
    if let Some(dbs) = &out.databases {
        dbs.load_ended(&mut snapshot).await;
    }
    let mut code = finish(&snapshot, thresholds, &out)?;
    if let Some(w) = writer {
        match w.await {
            Ok(Ok(n)) if !out.quiet => eprintln!("{n} samples written"),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                eprintln!("throng: error: the samples file {e}");
                code = super::EXIT_RUNTIME;
            }
            Err(e) => {
                eprintln!("throng: error: the samples writer failed: {e}");
                code = super::EXIT_RUNTIME;
            }
        }
    }
    Ok(code)
}
