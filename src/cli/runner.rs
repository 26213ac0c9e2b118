//! Running commands: the glue between the validated setup, the engine, signals and outputs.

use std::sync::Arc;

use throng_cli::{Flagged, Given, Outputs};
use throng_core::step::StepProtocol;
use throng_run::{Finished, Run};

use super::args::{Command, RunArgs};
use super::demo::demo;
use super::{Cli, CliError, EXIT_OK};

/// Runs a parsed command line and returns its exit code.
pub(crate) async fn execute(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Command::Run(a) => {
            let out = a.run.outputs()?;
            if !a.with.is_empty() {
                return super::grid::together(&a, out).await;
            }
            match super::grid::sides(&a)? {
                Some(sides) => {
                    check_sides(&a, &sides)?;
                    super::grid::run(&a, sides, out).await
                }
                None if a.run.is_grid()
                    || a.run.until.is_some()
                    || super::grid::with_file_sweep(&a).is_some() =>
                {
                    super::grid::run(&a, super::grid::Sides::default(), out).await
                }
                None => Ok(watched(&a, out, |out| run_once(&a, out)).await?.exit_code()),
            }
        }
        Command::Demo(a) => demo(a).await,
        Command::Compare(a) => Ok(throng_cli::results::run_compare(&a)?),
        Command::Report(a) => Ok(throng_cli::results::run_report(&a)?),
        Command::Merge(a) => Ok(throng_cli::results::run_merge(&a)?),
        Command::Completions(a) => super::generate::completions(&a),
        Command::Man(a) => super::generate::man(&a),
        Command::Serve(a) => match a.target {
            super::args::ServeTarget::Testbed(t) => {
                match t.run(throng_run::wait_for_signal()).await {
                    Ok(()) => Ok(EXIT_OK),
                    Err(throng_testbed::serve::ServeError::Usage(m)) => Err(CliError::Usage(m)),
                    Err(e) => Err(CliError::Runtime(e.into())),
                }
            }
            super::args::ServeTarget::Protocol(server, flags) => {
                let stop = Box::pin(throng_run::wait_for_signal());
                let serving = server
                    .serve(&flags, stop)
                    .map_err(|e| CliError::Usage(e.to_string()))?;
                serving.await?;
                Ok(EXIT_OK)
            }
        },
        Command::Protocol(c) => c.run().await.map(|()| EXIT_OK).map_err(CliError::from),
    }
}

/// One run of `throng run`: a scenario file, or a URL whose scheme picks the protocol.
pub(crate) async fn run_once(a: &RunArgs, out: Outputs) -> Result<Finished, CliError> {
    let prepared = prepare_once(a, out.shard).await?;
    run_load(prepared, out).await
}

/// A run of `throng run` made and checked, ready for its load: the [`Run`] with its
/// thresholds, and the containers it watches.
pub(crate) struct Prepared {
    run: Run,
    containers: Option<throng_run::Containers>,
}

impl Prepared {
    /// Checks the run without a load ([`Run::check`]): its rows' labels and its thresholds
    /// (the flags' and a scenario file's), and its steps against their targets
    /// ([`Run::prepare`]: a SQL syntax error), for a grid that checks every side first.
    pub(crate) async fn check(&self) -> Result<throng_run::Checked, CliError> {
        let checked = self.run.check().await?;
        self.run.prepare().await?;
        Ok(checked)
    }
}

/// [`run_once`]'s run of `shard`, made and checked (its flags, its driver, its steps against
/// their targets) but not started.
pub(crate) async fn prepare_once(
    a: &RunArgs,
    shard: throng_core::Shard,
) -> Result<Prepared, CliError> {
    if super::scenario::is_scenario(&a.url) {
        let setup = super::scenario::build_scenario(a)?;
        return prepare_scenario(setup).await;
    }
    if let Some(more) = a.mix.first() {
        return Err(CliError::Usage(format!(
            "{more}: one URL a run; several targets after the first are a mix of scenario \
             files (FILE.yaml@WEIGHT ...)"
        )));
    }
    if !a.targets.is_empty() {
        return Err(CliError::Usage(format!(
            "--target names a scenario file's targets; {} is a URL",
            a.url
        )));
    }
    // The URL's scheme picks the protocol (`throng::protocols()`).
    let protocols = crate::protocols();
    let Some(declared) = protocols.for_url(&a.url) else {
        let what = match a.url.split_once("://") {
            Some((scheme, _)) => format!("the scheme is `{scheme}`, not one of"),
            None => "not a URL of".into(),
        };
        return Err(CliError::Usage(format!(
            "{}: {what} the protocols throng speaks ({}), nor a scenario file (.yaml, .yml)",
            a.url,
            protocols.schemes()
        )));
    };
    let protocol = declared.name();
    applies(a, &**declared)?;
    let Some(flags) = a.protocols.of(&**declared) else {
        return Err(CliError::Usage(format!(
            "{}: {protocol} targets run from scenario files for now ({})",
            a.url,
            protocols.schemes()
        )));
    };
    let url = flags.url_run(&a.url, &a.request, &a.run, shard).await?;
    // A server stream's `(messages)` row takes thresholds too.
    let thresholds = a.run.thresholds(&url.run.labels())?;
    let containers = containers(a)?;
    ensure_open_files(url.connections)?;
    Ok(Prepared {
        run: url.run.connections(url.connections).thresholds(thresholds),
        containers,
    })
}

/// The containers `throng run`'s flags select (`--db-stats` reads databases through `--idle`
/// too, so it needs no container then).
pub(crate) fn containers(a: &RunArgs) -> Result<Option<throng_run::Containers>, CliError> {
    Ok(a.run.containers(&[], a.protocols.watches())?)
}

/// Runs `run` with the servers the protocols' flags watch (SQL's `--db-stats`) read for an
/// idle window before the load; the result gets their counters beside the load's requests.
pub(crate) async fn watched<F, Fut, T>(a: &RunArgs, mut out: Outputs, run: F) -> Result<T, CliError>
where
    F: FnOnce(Outputs) -> Fut,
    Fut: std::future::Future<Output = Result<T, CliError>>,
{
    // Each protocol's servers (a mixed scenario's `--db-stats` and `--nats-monitor`), read
    // through their idle windows one protocol after the other, are watched through the load
    // as one: a block each in the result.
    let mut servers = Vec::new();
    for p in a.protocols.all() {
        servers.extend(p.watch(&a.request, &a.run, &a.url).await?);
    }
    if !servers.is_empty() {
        out.databases = Some(Arc::new(throng_core::watch::Watched::join(servers)));
    }
    run(out).await
}

/// The protocol flags given, each with the protocols it applies to (their flags, which carry
/// their declarations): each protocol's own, and the shared request flags that only some
/// protocols read (`-H`, `-d`, `--streams`).
fn given(a: &RunArgs) -> Vec<(Given, Vec<&Flagged>)> {
    let all = a.protocols.all();
    let own = all
        .iter()
        .flat_map(|p| p.given().into_iter().map(|f| (Given::Own(f), vec![*p])));
    let shared = a.request.given().into_iter().map(|f| {
        let readers = all.iter().filter(|p| p.reads().contains(&f));
        (Given::Shared(f), readers.copied().collect())
    });
    own.chain(shared).collect()
}

/// Whether `to` (a flag's protocols) holds `protocol`'s flags, by its declaration.
fn holds(to: &[&Flagged], protocol: &dyn StepProtocol) -> bool {
    to.iter().any(|p| p.is(protocol))
}

/// The flags of `a` with those of protocols other than `protocol` taken back: one side's run
/// in a grid whose sides speak several protocols (`--call` is the gRPC side's). `-d` goes to
/// the sides whose protocol takes it as its request ([`AnyFlags::takes_body`]: gRPC's with
/// `--call`, HTTP's with `-m` other than GET), to every reader only when none does: a gRPC
/// message was once the body of the HTTP side's GET.
///
/// [`AnyFlags::takes_body`]: throng_cli::AnyFlags::takes_body
pub(super) fn for_protocol(a: &RunArgs, protocol: &dyn StepProtocol) -> RunArgs {
    let mut r = a.clone();
    let all = a.protocols.all();
    let body_to: Vec<&Flagged> = all
        .iter()
        .filter(|p| p.reads().contains(&throng_cli::BODY) && p.takes_body())
        .copied()
        .collect();
    for (flag, to) in given(a) {
        let elsewhere = flag == Given::Shared(throng_cli::BODY)
            && !body_to.is_empty()
            && !holds(&body_to, protocol);
        if let (Given::Shared(part), true) = (flag, !holds(&to, protocol) || elsewhere) {
            r.request.clear(part);
        }
    }
    for p in r.protocols.all_mut() {
        if !p.is(protocol) {
            p.clear();
        }
    }
    r
}

/// Checks the flags that name sides (`--http2=SIDE`) against the sides of an A/B run, before
/// any load: each protocol's against the sides of its own and the others.
pub(super) fn check_sides(a: &RunArgs, sides: &super::grid::Sides) -> Result<(), CliError> {
    let protocols = crate::protocols();
    for p in a.protocols.all() {
        let (mut own, mut others) = (Vec::new(), Vec::new());
        for s in &sides.list {
            match protocols.for_url(&s.target).is_some_and(|d| p.is(&**d)) {
                true => own.push(s.name.as_str()),
                false => others.push(s.name.as_str()),
            }
        }
        p.check_sides(&own, &others)?;
    }
    Ok(())
}

/// Checks that every protocol flag given applies to one of `protocols` at least (a grid's
/// sides'), naming the first that applies to none.
pub(super) fn applies_to_any(
    a: &RunArgs,
    protocols: &[Arc<dyn StepProtocol>],
) -> Result<(), CliError> {
    match given(a)
        .into_iter()
        .find(|(_, to)| !protocols.iter().any(|p| holds(to, &**p)))
    {
        Some((flag, to)) => Err(CliError::Usage(format!(
            "{flag} applies to {} targets; no side is one",
            schemes_of(&to)
        ))),
        None => Ok(()),
    }
}

/// The URL schemes of `protocols`, as a message lists them.
fn schemes_of(protocols: &[&Flagged]) -> String {
    let all: Vec<String> = protocols
        .iter()
        .flat_map(|p| p.schemes().iter().map(|s| format!("{s}://")))
        .collect();
    match all.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The protocol flags given for a URL of another protocol exit 2 saying so, the same way for
/// every protocol, where they used to be ignored (`--workload` on an http:// URL ran plain GETs).
fn applies(a: &RunArgs, declared: &dyn StepProtocol) -> Result<(), CliError> {
    for (flag, to) in given(a) {
        if !holds(&to, declared) {
            return Err(CliError::Usage(format!(
                "{flag} applies to {} targets; {} is not one",
                schemes_of(&to),
                throng_core::redact(&a.url)
            )));
        }
    }
    match a.protocols.of(declared) {
        Some(p) => Ok(p.check_url(&a.request)?),
        None => Ok(()),
    }
}

/// Raises the open-file limit to the hard limit and checks that `connections` fit under it:
/// the library's [`throng_run::raise_open_files`], whose warning is a usage error here.
pub(crate) fn ensure_open_files(connections: u64) -> Result<u64, CliError> {
    throng_run::raise_open_files(connections).map_err(|e| {
        CliError::Usage(format!(
            "{e}: lower -c/--max-in-flight, or raise the hard limit (ulimit -Hn)"
        ))
    })
}

/// Runs a scenario file to its end, prints the summary and writes the result.
pub(crate) async fn run_scenario(
    setup: super::scenario::ScenarioSetup,
    out: Outputs,
) -> Result<Finished, CliError> {
    run_load(prepare_scenario(setup).await?, out).await
}

/// A scenario file's run, made and checked before its load.
async fn prepare_scenario(setup: super::scenario::ScenarioSetup) -> Result<Prepared, CliError> {
    ensure_open_files(setup.connections)?;
    // The file's `load: start` is the plan's (`RunPlan::start`): the run waits for it. Its
    // steps are checked against their targets (a SQL syntax error) by the run itself
    // (`Run::prepare`), before any load.
    Ok(Prepared {
        run: Run::new(setup.plan, Arc::new(setup.driver))
            .connections(setup.connections)
            .thresholds(setup.thresholds),
        containers: setup.containers,
    })
}

/// Runs a prepared run with the command line's outputs (containers, databases, signals, live
/// UI or progress line, then the summary and the outputs).
pub(crate) async fn run_load(prepared: Prepared, out: Outputs) -> Result<Finished, CliError> {
    let mut run = out.apply(prepared.run);
    if let Some(c) = prepared.containers {
        run = run.containers(c);
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
