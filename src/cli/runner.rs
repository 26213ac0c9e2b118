//! Running commands: the glue between the validated setup, the engine, signals and outputs.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use throng_core::stages::parse_duration;
use throng_core::{Percentiles, RunState, Snapshot};
use throng_http::HttpDriver;
use throng_report::{render_summary, Threshold};
use throng_testbed::{BankService, Delay, Fault, HttpTarget};

use super::args::{Command, DemoArgs, FaultArg, ServeArgs, ServeTarget};
use super::plan::{build, RunSetup};
use super::{Cli, CliError, EXIT_OK, EXIT_THRESHOLDS};

/// Where a run's outputs go.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The JSON result file.
    pub json: Option<std::path::PathBuf>,
    /// No progress line.
    pub quiet: bool,
    /// Show the live dashboard instead of the progress line (see [`super::live::wanted`]).
    pub tui: bool,
}

/// Runs a parsed command line and returns its exit code.
pub async fn execute(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Command::Run(a) if super::scenario::is_scenario(&a.url) => {
            let setup = super::scenario::build_scenario(&a)?;
            let out = Outputs {
                json: a.json.clone(),
                quiet: a.quiet,
                tui: super::live::wanted(a.no_tui),
            };
            run_scenario(setup, out).await
        }
        Command::Run(a) => {
            if !a.targets.is_empty() {
                return Err(CliError::Usage(format!(
                    "--target names a scenario file's targets; {} is a URL",
                    a.url
                )));
            }
            let setup = build(&a)?;
            run_http(
                setup,
                Outputs {
                    json: a.json.clone(),
                    quiet: a.quiet,
                    tui: super::live::wanted(a.no_tui),
                },
            )
            .await
        }
        Command::Demo(a) => demo(a).await,
        Command::Serve(a) => serve(a).await,
    }
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
    plan: throng_core::RunPlan,
    driver: Arc<D>,
    thresholds: &[Threshold],
    containers: Option<&super::containers::Watch>,
    out: Outputs,
) -> Result<u8, CliError> {
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
    let handle = throng_engine::start_with(plan, driver, extras)
        .await
        .map_err(|e| match e {
            throng_engine::EngineError::Setup(_) | throng_engine::EngineError::Thread(_) => {
                CliError::Runtime(anyhow::anyhow!(e))
            }
            other => CliError::Usage(other.to_string()),
        })?;
    let signals = tokio::spawn(stop_on_signal(handle.stop_token(), handle.abort_token()));
    let mut changes = Vec::new();
    let mut headless = None;
    let snapshot = if out.tui {
        let shown = super::live::show(handle).await;
        changes = shown.changes;
        shown.snapshot
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
    finish_with(&snapshot, thresholds, &out, &changes)
}

/// Builds the result, evaluates thresholds, prints the summary, writes the JSON; the exit code.
pub fn finish(
    snapshot: &Snapshot,
    thresholds: &[Threshold],
    out: &Outputs,
) -> Result<u8, CliError> {
    finish_with(snapshot, thresholds, out, &[])
}

/// [`finish`], recording the changes made to the run while it went (the dashboard's keys).
pub fn finish_with(
    snapshot: &Snapshot,
    thresholds: &[Threshold],
    out: &Outputs,
    changes: &[throng_engine::Change],
) -> Result<u8, CliError> {
    let changes = changes
        .iter()
        .map(|c| throng_report::ChangeResult {
            t: c.t,
            what: c.what.clone(),
        })
        .collect();
    let result = throng_report::finish(snapshot, thresholds, changes);
    print!("{}", render_summary(&result));
    let mut code = if result.passed() {
        EXIT_OK
    } else {
        EXIT_THRESHOLDS
    };
    if let Some(path) = &out.json {
        let text = serde_json::to_string_pretty(&result).context("serialising the result")? + "\n";
        if let Err(e) = write_result(path, &text) {
            // The run is over and cannot be had again: keep its result somewhere.
            let spare = std::env::temp_dir().join(format!(
                "throng-result-{}-{}.json",
                std::process::id(),
                snapshot
                    .started_at
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs())
            ));
            match std::fs::write(&spare, &text) {
                Ok(()) => eprintln!(
                    "throng: error: cannot write {}: {e}; the result was written to {} instead",
                    path.display(),
                    spare.display()
                ),
                Err(e2) => eprintln!(
                    "throng: error: cannot write {} ({e}) nor {} ({e2}); the result is lost",
                    path.display(),
                    spare.display()
                ),
            }
            code = super::EXIT_RUNTIME;
        } else {
            eprintln!("result written to {}", path.display());
        }
    }
    Ok(code)
}

/// Writes the result and makes sure it reached the file (a full disk shows up at `sync`).
fn write_result(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.flush()?;
    match f.sync_all() {
        // Character devices and pipes cannot sync; what they took was written.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        other => other,
    }
}

/// Checks, before any load, that a result file can be written at `path`: its directory exists
/// and takes a new file, or the file exists and can be written. Nothing is left behind.
pub fn check_writable(path: &std::path::Path) -> Result<(), CliError> {
    let bad = |why: String| CliError::Usage(format!("--json {}: {why}", path.display()));
    if path.is_dir() {
        return Err(bad("is a directory; name a file".into()));
    }
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| bad(format!("cannot be written: {e}")));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!(
            "the directory {} does not exist",
            dir.display()
        )));
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => std::fs::remove_file(path)
            .map_err(|e| bad(format!("cannot be removed after a test write: {e}"))),
        Err(e) => Err(bad(format!("cannot be created: {e}"))),
    }
}

/// Stops the run on Ctrl-C or SIGTERM; the next one (or the first, if the run was already
/// stopping, as after `q` in the dashboard) cuts the grace period short.
async fn stop_on_signal(
    stop: tokio_util::sync::CancellationToken,
    abort: tokio_util::sync::CancellationToken,
) {
    let mut signals = Signals::new();
    signals.next().await;
    if !stop.is_cancelled() {
        eprintln!("\nstopping: finishing requests in flight (Ctrl-C again to cut this short), then writing results");
        stop.cancel();
        signals.next().await;
    }
    eprintln!("\nstopping now: requests in flight are counted as aborted; writing results");
    abort.cancel();
}

/// Ctrl-C and SIGTERM, as a stream of arrivals (listening from its creation, so that a signal
/// between two waits is not lost).
struct Signals {
    #[cfg(unix)]
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let streams = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(i), Ok(t)) => Some((i, t)),
                _ => None,
            };
            Signals { streams }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        if let Some((int, term)) = &mut self.streams {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The headless progress line, about once a second on stderr.
async fn progress(mut rx: tokio::sync::watch::Receiver<Arc<Snapshot>>) {
    while rx.changed().await.is_ok() {
        let s = rx.borrow_and_update().clone();
        if s.state == RunState::Done || s.series.is_empty() {
            continue;
        }
        eprintln!("{}", progress_line(&s));
    }
}

/// One progress line: elapsed, last-second rate and percentiles, errors so far.
pub fn progress_line(s: &Snapshot) -> String {
    let last = Percentiles::of(&s.last.latency);
    let point = s.series.last().copied().unwrap_or_default();
    let ms = |us: u64| us as f64 / 1000.0;
    let mut line = format!(
        "[{:>6.1}s] {:>8} req/s  p50 {:>7.2} ms  p99 {:>7.2} ms  errors {} ({:.2}%)  active {}",
        s.elapsed.as_secs_f64(),
        point.requests,
        ms(last.p50),
        ms(last.p99),
        s.total.errors,
        s.total.error_rate() * 100.0,
        s.active
    );
    if let Some(l) = &s.lag {
        line.push_str(&format!("  late {}  dropped {}", l.late, l.dropped));
    }
    line
}

/// The bundled bank-transfer scenario, run by `throng demo`.
pub const DEMO_SCENARIO: &str = include_str!("../../scenarios/bank-transfer.yaml");

async fn demo(a: DemoArgs) -> Result<u8, CliError> {
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
    let mut args = vec![
        "throng".to_string(),
        "run".into(),
        "scenarios/bank-transfer.yaml".into(),
        "-z".into(),
        a.duration.clone(),
    ];
    match a.rate {
        Some(r) => args.extend(["-q".into(), r.to_string()]),
        None => args.extend(["-c".into(), a.users.to_string()]),
    }
    let cli =
        <Cli as clap::Parser>::try_parse_from(&args).map_err(|e| CliError::Usage(e.to_string()))?;
    let Command::Run(run) = cli.command else {
        return Err(CliError::Usage("demo".into()));
    };
    let setup = super::scenario::build_from(&run, scenario)?;
    let out = Outputs {
        json: a.json,
        quiet: false,
        tui: super::live::wanted(a.no_tui),
    };
    let code = run_scenario(setup, out).await?;
    let errors = bank.server_errors();
    drop(bank);
    if errors > 0 {
        eprintln!("demo: the bank answered {errors} requests with a server error");
    }
    Ok(code)
}

fn parse_stall(v: &str) -> Result<(Duration, Duration), CliError> {
    let bad = || CliError::Usage(format!("--stall {v:?}: write FROM..TO, e.g. 5s..8s"));
    let (a, b) = v.split_once("..").ok_or_else(bad)?;
    let (a, b) = (
        parse_duration(a.trim()).map_err(|_| bad())?,
        parse_duration(b.trim()).map_err(|_| bad())?,
    );
    if b <= a {
        return Err(bad());
    }
    Ok((a, b))
}

async fn serve(a: ServeArgs) -> Result<u8, CliError> {
    if a.target == ServeTarget::Bank {
        return serve_bank(a).await;
    }
    let d = |flag: &str, v: &str| {
        parse_duration(v).map_err(|e| CliError::Usage(format!("{flag} {v:?}: {e}")))
    };
    let delay = match (&a.delay, &a.delay_max) {
        (None, _) => Delay::None,
        (Some(x), None) => Delay::Fixed(d("--delay", x)?),
        (Some(x), Some(y)) => Delay::Uniform(d("--delay", x)?, d("--delay-max", y)?),
    };
    let target = HttpTarget {
        delay,
        status: a.status,
        stall: a.stall.as_deref().map(parse_stall).transpose()?,
        fault: a.fault.map(|f| match f {
            FaultArg::Reset => Fault::Reset,
            FaultArg::Garbage => Fault::Garbage,
            FaultArg::Hang => Fault::Hang,
        }),
        tls: a.tls,
        ..HttpTarget::default()
    };
    let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .map_err(|e| CliError::Usage(format!("cannot listen on {}:{}: {e}", a.host, a.port)))?;
    let running = target
        .serve(listener)
        .await
        .context("starting the target")?;
    if let Some(pem) = &running.cert_pem {
        println!("{pem}");
    }
    println!("serving on {}", running.url());
    wait_for_signal().await;
    eprintln!("served {} requests", running.requests());
    Ok(EXIT_OK)
}

async fn serve_bank(a: ServeArgs) -> Result<u8, CliError> {
    let shaping = a.delay.is_some() || a.stall.is_some() || a.fault.is_some() || a.tls;
    if shaping || a.status != 200 {
        return Err(CliError::Usage(
            "--delay, --status, --stall, --fault and --tls apply to the http target only".into(),
        ));
    }
    let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .map_err(|e| CliError::Usage(format!("cannot listen on {}:{}: {e}", a.host, a.port)))?;
    let running = BankService::default()
        .serve(listener)
        .await
        .context("starting the bank")?;
    println!("serving the bank on {}", running.url());
    wait_for_signal().await;
    eprintln!(
        "served {} requests ({} server errors)",
        running.requests(),
        running.server_errors()
    );
    Ok(EXIT_OK)
}
