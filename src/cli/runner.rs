//! Running commands: the glue between the validated setup, the engine, signals and outputs.

use std::sync::Arc;

use throng_http::HttpClient;
use throng_report::Threshold;
use throng_run::{Finished, Run};

use super::args::{Command, RunArgs};
use super::plan::{build, RunSetup};
pub use super::serve::DEMO_SCENARIO;
use super::serve::{demo, serve};
use super::{Cli, CliError};

/// Where a run's outputs go (the flags' [`throng_run::flags::Outputs`]) and the databases it
/// watches.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The outputs, shard and start.
    pub run: throng_run::flags::Outputs,
    /// Databases whose own counters go into the result (`--db-stats`).
    pub databases: Option<Arc<super::sql::DbWatch>>,
    /// Prepare and check the run (its flags, its driver, its steps against their targets),
    /// then stop before the load with [`CliError::Checked`].
    pub check_only: bool,
}

/// Runs a parsed command line and returns its exit code.
pub async fn execute(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Command::Run(a) => {
            let out = Outputs::of(&a)?;
            if !a.with.is_empty() {
                return super::grid::together(&a, out).await;
            }
            match super::grid::sides(&a)? {
                Some(sides) => super::grid::run(&a, sides, out).await,
                None if a.run.is_grid() || a.run.until.is_some() => {
                    super::grid::run(&a, Vec::new(), out).await
                }
                None => Ok(super::sql::with_db_stats(&a, out, |out| run_once(&a, out))
                    .await?
                    .exit_code()),
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
    /// The outputs `throng run`'s flags ask for, checked now (files writable, shard, start).
    pub fn of(a: &RunArgs) -> Result<Outputs, CliError> {
        Ok(Outputs {
            run: a.run.outputs()?,
            ..Outputs::default()
        })
    }
}

/// One run of `throng run`: a scenario file, or a URL whose scheme picks the protocol.
pub async fn run_once(a: &RunArgs, out: Outputs) -> Result<Finished, CliError> {
    if super::scenario::is_scenario(&a.url) {
        let setup = super::scenario::build_scenario(a)?;
        return run_scenario(setup, out).await;
    }
    if let Some(more) = a.mix.first() {
        return Err(CliError::Usage(format!(
            "{more}: one URL a run; several targets after the first are a mix of scenario \
             files (FILE.yaml@WEIGHT ...)"
        )));
    }
    if !a.targets.is_empty() || a.seed.is_some() {
        let flag = if a.seed.is_some() {
            "--seed seeds the picks of a scenario file's flows"
        } else {
            "--target names a scenario file's targets"
        };
        return Err(CliError::Usage(format!("{flag}; {} is a URL", a.url)));
    }
    // The URL's scheme picks the protocol (`throng::protocols()`).
    let protocols = crate::protocols();
    let protocol = protocols.for_url(&a.url).map(|p| p.name());
    if protocol.is_none() {
        let what = match a.url.split_once("://") {
            Some((scheme, _)) => format!("the scheme is `{scheme}`, not one of"),
            None => "not a URL of".into(),
        };
        return Err(CliError::Usage(format!(
            "{}: {what} the protocols throng speaks ({}), nor a scenario file (.yaml, .yml)",
            a.url,
            protocols.schemes()
        )));
    }
    applies(a, protocol.unwrap_or("http"))?;
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

/// One protocol flag: its name in messages, whether it was given, the protocols it applies to,
/// and how to take it back (a side of another protocol in a grid of several).
struct ProtocolFlag {
    flag: &'static str,
    given: bool,
    to: &'static [&'static str],
    clear: fn(&mut RunArgs),
}

/// The protocol flags of `throng run URL` and the protocols they apply to, in one place.
fn protocol_flags(a: &RunArgs) -> Vec<ProtocolFlag> {
    const HTTP: &[&str] = &["http"];
    const GRPC: &[&str] = &["grpc"];
    const SQL: &[&str] = &["sql"];
    const HTTP_GRPC: &[&str] = &["http", "grpc"];
    let (g, s) = (&a.grpc, &a.sql);
    let f = |flag, given, to, clear| ProtocolFlag {
        flag,
        given,
        to,
        clear,
    };
    vec![
        f("--connections", g.connections.is_some(), GRPC, |a| {
            a.grpc.connections = None
        }),
        f(
            "-m/--method",
            !a.method.eq_ignore_ascii_case("GET"),
            HTTP,
            |a| a.method = "GET".into(),
        ),
        f("--http2", a.http2, HTTP, |a| a.http2 = false),
        f("--no-keepalive", a.no_keepalive, HTTP, |a| {
            a.no_keepalive = false
        }),
        f("--streams", a.streams.is_some(), HTTP_GRPC, |a| {
            a.streams = None
        }),
        f("-H/--header", !a.headers.is_empty(), HTTP_GRPC, |a| {
            a.headers.clear()
        }),
        f("-d/--body", a.body.is_some(), HTTP_GRPC, |a| a.body = None),
        f("--call", g.call.is_some(), GRPC, |a| a.grpc.call = None),
        f("--proto", !g.protos.is_empty(), GRPC, |a| {
            a.grpc.protos.clear()
        }),
        f("-I/--import-path", !g.import_paths.is_empty(), GRPC, |a| {
            a.grpc.import_paths.clear()
        }),
        f("--protoset", g.protoset.is_some(), GRPC, |a| {
            a.grpc.protoset = None
        }),
        f(
            "--message-interval",
            g.message_interval.is_some(),
            GRPC,
            |a| a.grpc.message_interval = None,
        ),
        f("--sql", !s.sql.is_empty(), SQL, |a| a.sql.sql.clear()),
        f("--sql-file", s.sql_file.is_some(), SQL, |a| {
            a.sql.sql_file = None
        }),
        f("--param", !s.params.is_empty(), SQL, |a| {
            a.sql.params.clear()
        }),
        f("--transaction", s.transaction, SQL, |a| {
            a.sql.transaction = false
        }),
        f("--workload", s.workload.is_some(), SQL, |a| {
            a.sql.workload = None
        }),
        f("--retry-on", s.retry_on.is_some(), SQL, |a| {
            a.sql.retry_on = None
        }),
        f(
            "--tables, --table-size and --rand-type",
            s.tables.is_some() || s.table_size.is_some() || s.rand_type.is_some(),
            SQL,
            |a| (a.sql.tables, a.sql.table_size, a.sql.rand_type) = (None, None, None),
        ),
    ]
}

/// The flags of `a` with those of protocols other than `protocol` taken back: one side's run
/// in a grid whose sides speak several protocols (`--call` is the gRPC side's).
pub(super) fn for_protocol(a: &RunArgs, protocol: &str) -> RunArgs {
    let mut r = a.clone();
    for f in protocol_flags(a) {
        if f.given && !f.to.contains(&protocol) {
            (f.clear)(&mut r);
        }
    }
    r
}

/// Checks that every protocol flag given applies to one of `protocols` at least (a grid's
/// sides'), naming the first that applies to none.
pub(super) fn applies_to_any(a: &RunArgs, protocols: &[&str]) -> Result<(), CliError> {
    match protocol_flags(a)
        .into_iter()
        .find(|f| f.given && !f.to.iter().any(|p| protocols.contains(p)))
    {
        Some(f) => Err(CliError::Usage(format!(
            "{} applies to {} targets; no side is one",
            f.flag,
            schemes_of(f.to)
        ))),
        None => Ok(()),
    }
}

/// The URL schemes of `protocols`, as a message lists them.
fn schemes_of(protocols: &[&str]) -> String {
    let schemes = |p: &str| match p {
        "http" => ["http://", "https://"].as_slice(),
        "grpc" => &["grpc://"],
        _ => &["postgres://", "mysql://", "sqlite://"],
    };
    let all: Vec<&str> = protocols.iter().flat_map(|p| schemes(p)).copied().collect();
    match all.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The protocol flags given for a URL of another protocol exit 2 saying so, the same way for
/// every protocol, where they used to be ignored (`--workload` on an http:// URL ran plain GETs).
fn applies(a: &RunArgs, protocol: &str) -> Result<(), CliError> {
    for f in protocol_flags(a) {
        if f.given && !f.to.contains(&protocol) {
            return Err(CliError::Usage(format!(
                "{} applies to {} targets; {} is not one",
                f.flag,
                schemes_of(f.to),
                without_password(&a.url)
            )));
        }
    }
    // HTTP/1.1 opens a connection per user: only HTTP/2 shares one among --streams users.
    if protocol == "http" && a.streams.is_some() && !a.http2 {
        return Err(CliError::Usage(
            "--streams is how many users share an HTTP/2 connection: give --http2 too \
             (HTTP/1.1 opens a connection per user: -c)"
                .into(),
        ));
    }
    Ok(())
}

/// A URL as messages show it: a password in it (`postgres://u:pw@h/db`) as `***`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
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
pub async fn run_http(setup: RunSetup, out: Outputs) -> Result<Finished, CliError> {
    let conns = match setup.http.http2 {
        true => setup
            .plan
            .peak_concurrency()
            .div_ceil(setup.http.streams as u64),
        false => setup.plan.peak_concurrency(),
    };
    ensure_open_files(conns)?;
    let watch = setup.containers.as_ref();
    let usage = |e: throng_http::HttpConfigError| CliError::Usage(e.to_string());
    // Only a request with templates pays for rendering; the rest is prepared once for the run.
    match setup.per_call.clone() {
        None => {
            let driver = HttpClient::one_step(setup.http.clone()).map_err(usage)?;
            run_load(setup.plan, Arc::new(driver), &setup.thresholds, watch, out).await
        }
        Some((parts, calls)) => {
            let driver =
                HttpClient::one_step_per_call(setup.http.clone(), parts, calls).map_err(usage)?;
            run_load(setup.plan, Arc::new(driver), &setup.thresholds, watch, out).await
        }
    }
}

/// Runs a scenario file to its end, prints the summary and writes the result.
pub async fn run_scenario(
    setup: super::scenario::ScenarioSetup,
    mut out: Outputs,
) -> Result<Finished, CliError> {
    ensure_open_files(setup.connections)?;
    if let Some(after) = setup.start.filter(|d| !d.is_zero()) {
        // The file's `load: start`: this load begins that long after the run (or the shards'
        // common start).
        let from = out.run.start_at.unwrap_or_else(std::time::SystemTime::now);
        out.run.start_at = Some(from + after);
    }
    // Steps checked against their targets (a SQL syntax error) before any load.
    setup
        .driver
        .prepare()
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    run_load(
        setup.plan,
        Arc::new(setup.driver),
        &setup.thresholds,
        setup.containers.as_ref(),
        out,
    )
    .await
}

/// Runs any driver under a plan through the library's [`throng_run::Run`]: containers,
/// databases, signals, live UI or progress line, then the summary and the outputs.
pub async fn run_load<D: throng_core::Driver>(
    plan: throng_core::RunPlan,
    driver: Arc<D>,
    thresholds: &[Threshold],
    containers: Option<&throng_run::Containers>,
    out: Outputs,
) -> Result<Finished, CliError> {
    if out.check_only {
        return Err(CliError::Checked(
            throng_run::labels(driver.as_ref()),
            thresholds.to_vec(),
        ));
    }
    let mut run = out
        .run
        .apply(Run::new(plan, driver).thresholds(thresholds.iter().cloned()));
    if let Some(c) = containers {
        run = run.containers(c.clone());
    }
    if let Some(start) = out.databases.and_then(|d| d.take()) {
        run = run.databases(start);
    }
    let finished = run.execute().await?;
    for w in &finished.warnings {
        eprintln!("warning: {w}");
    }
    for f in &finished.failures {
        eprintln!("throng: error: {f}");
    }
    Ok(finished)
}
