//! `throng run grpc://...` and `throng serve grpc`: gRPC's flags, mapped onto the gRPC driver and
//! the testbed's gRPC target. Every other flag of `throng run` (load, thresholds, outputs,
//! containers) means what it means for HTTP.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use throng_core::step::Render as _;
use throng_grpc::{Descriptors, GrpcConfig, GrpcDriver};
use throng_scenario::template::Calls;

use super::args::{FaultArg, RunArgs, ServeArgs};
use super::plan::build_plan;
use super::runner::{ensure_open_files, run_load, Outputs};
use super::CliError;
use throng_run::flags::parse_thresholds;

/// Flags of `throng run` for grpc:// and grpcs:// targets.
#[derive(Debug, Clone, Default, Args)]
pub struct GrpcArgs {
    /// gRPC: the method, package.Service/Method (e.g. helloworld.Greeter/SayHello). The
    /// request is -d's JSON in the protobuf JSON mapping (a JSON array, or one object per line,
    /// for client-streaming and bidi methods); -H sends metadata; -t is the call's deadline
    /// (sent as grpc-timeout); --streams calls share one HTTP/2 connection.
    #[arg(long, value_name = "METHOD", help_heading = "gRPC")]
    pub call: Option<String>,
    /// gRPC: a .proto file with the method (repeatable), compiled at run time (no protoc).
    /// Without --proto or --protoset, the server's reflection is asked (v1, then v1alpha). With
    /// a scenario: for its grpc steps that name no `proto` of their own.
    #[arg(long = "proto", value_name = "FILE", help_heading = "gRPC")]
    pub protos: Vec<PathBuf>,
    /// gRPC: an import path for --proto (repeatable; each file's own directory is one too).
    #[arg(
        short = 'I',
        long = "import-path",
        value_name = "DIR",
        help_heading = "gRPC"
    )]
    pub import_paths: Vec<PathBuf>,
    /// gRPC: a FileDescriptorSet (protoc --descriptor_set_out --include_imports) with the method.
    #[arg(
        long,
        value_name = "FILE",
        help_heading = "gRPC",
        conflicts_with = "protos"
    )]
    pub protoset: Option<PathBuf>,
    /// gRPC: how many HTTP/2 connections carry the calls (in a scenario, each grpc:// target's),
    /// in all, with the users (or in-flight requests) spread evenly over them, at most --streams
    /// on each, and no more worker threads than connections [default: the fewest that carry the
    /// users at --streams each, measured the cheapest per call; in a scenario, one per --streams
    /// users on each worker thread].
    #[arg(long, value_name = "N", help_heading = "gRPC", value_parser = super::args::at_least_one::<usize>)]
    pub connections: Option<usize>,
    /// gRPC, client streaming and bidi: pause this long before each message after the first
    /// [default: send them as fast as the stream takes them].
    #[arg(long, value_name = "DURATION", help_heading = "gRPC")]
    pub message_interval: Option<String>,
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// Whether any gRPC flag was given (they make no sense for another protocol).
pub fn given(a: &GrpcArgs) -> bool {
    a.call.is_some()
        || !a.protos.is_empty()
        || !a.import_paths.is_empty()
        || a.protoset.is_some()
        || a.message_interval.is_some()
        || a.connections.is_some()
}

/// The gRPC configuration of `throng run grpc://...`, every bad value named with its flag.
pub fn config(a: &RunArgs) -> Result<GrpcConfig, CliError> {
    let g = &a.grpc;
    let call = g.call.as_deref().ok_or_else(|| {
        usage(format!(
            "{}: a gRPC run needs --call package.Service/Method",
            a.url
        ))
    })?;
    let mut cfg = GrpcConfig::new(&a.url, call).map_err(|e| match e {
        throng_grpc::GrpcError::Call(_) => usage(format!("--call {e}")),
        other => usage(other.to_string()),
    })?;
    cfg.service_method().map_err(|e| usage(e.to_string()))?;
    cfg.descriptors = match (&g.protoset, g.protos.is_empty()) {
        (Some(p), _) => Descriptors::Protoset(p.clone()),
        (None, false) => Descriptors::Protos {
            files: g.protos.clone(),
            includes: g.import_paths.clone(),
        },
        (None, true) if !g.import_paths.is_empty() => {
            return Err(usage("-I/--import-path is for --proto files; give one"))
        }
        (None, true) => Descriptors::Reflection,
    };
    for h in &a.headers {
        cfg.metadata(h).map_err(|e| usage(format!("-H {e}")))?;
    }
    throng_grpc::metadata(&cfg.metadata).map_err(|e| usage(format!("-H {e}")))?;
    cfg.data = match a.body.as_deref() {
        Some(b) => Some(match b.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| usage(format!("-d @{path}: cannot read the file: {e}")))?,
            None => b.to_string(),
        }),
        None => None,
    };
    let d = |flag: &str, v: &str| {
        let d = throng_core::stages::parse_duration(v)
            .map_err(|e| usage(format!("{flag} {v:?}: not a duration ({e})")))?;
        if d.is_zero() {
            return Err(usage(format!("{flag} {v:?}: must be longer than zero")));
        }
        Ok(d)
    };
    cfg.timeout = d("-t/--timeout", &a.timeout)?;
    cfg.connect_timeout = d("--connect-timeout", &a.connect_timeout)?;
    cfg.message_interval = g
        .message_interval
        .as_deref()
        .map(|v| d("--message-interval", v))
        .transpose()?;
    if a.streams() == 0 {
        return Err(usage("--streams must be at least 1"));
    }
    cfg.streams = a.streams();
    cfg.connections = g.connections;
    if (a.insecure || a.cacert.is_some()) && !cfg.is_tls() {
        return Err(usage(format!(
            "--insecure and --cacert apply to grpcs:// targets; {} is plain grpc",
            a.url
        )));
    }
    cfg.insecure = a.insecure;
    cfg.cacert = a.cacert.clone();
    cfg.label = a.label.clone();
    Ok(cfg)
}

/// The plan and the gRPC configuration of `throng run grpc://...`, with its connections fitted
/// to the load (see [`fit_connections`]).
pub fn build(a: &RunArgs) -> Result<(throng_core::RunPlan, GrpcConfig), CliError> {
    let mut plan = build_plan(a)?;
    let mut cfg = config(a)?;
    cfg.connections = Some(fit_connections(&mut plan, cfg.connections, cfg.streams)?);
    Ok((plan, cfg))
}

/// The HTTP/2 connections that carry a gRPC target's calls, in all: `connections` (the flag's
/// value) if it fits the load, by default the fewest that carry the users (or in-flight
/// requests) at `streams` each, which measured the cheapest (README: at `-c 50`, one
/// connection took 4.3-4.8 CPU-seconds per million calls, two 4.9-6.5, ten 6.9-7.5, fifty
/// 16-19). No more users than `N × streams`, nor fewer than `N`; and no more worker threads in
/// `plan` than connections (a thread drives its own, and each worker has at least one).
pub fn fit_connections(
    plan: &mut throng_core::RunPlan,
    connections: Option<usize>,
    streams: usize,
) -> Result<usize, CliError> {
    let users = plan.shard.share(plan.peak_concurrency());
    let n = match connections {
        Some(n) if n as u64 > users => {
            return Err(usage(format!(
                "--connections {n}: more connections than the {users} users (or requests in \
                 flight) that would use them"
            )))
        }
        Some(n) => n,
        None => users.div_ceil(streams as u64).max(1) as usize,
    };
    let most = n as u64 * streams as u64;
    if users > most {
        return Err(usage(format!(
            "--connections {n} with --streams {streams} carry {most} calls at once, and the \
             load has {users}: raise --streams or --connections"
        )));
    }
    let threads = match plan.threads {
        0 => std::thread::available_parallelism().map_or(1, |t| t.get()),
        t => t,
    };
    plan.threads = threads.min(n);
    Ok(n)
}

/// The driver of a configuration, its `-d` rendered per call when it holds templates (`{{
/// seq() }}`): checked against the method before the load through one rendering of its own (a
/// count apart, so the run's `seq()` starts at 0). Bad input exits 2; a server that did not
/// answer in time is the run's failure, exit 1.
pub async fn driver(mut cfg: GrpcConfig) -> Result<GrpcDriver, CliError> {
    let per_call = match cfg.data.as_deref() {
        Some(d) if d.contains("{{") || d.contains("{%") => {
            let bad = |e: String| usage(format!("-d/--body's template: {e}"));
            let mut calls = Calls::default();
            let text = calls.compile(d).map_err(bad)?;
            let mut probe = Calls::default();
            let sample = probe
                .compile(d)
                .and_then(|t| probe.render(&t))
                .map_err(bad)?;
            cfg.data = Some(sample);
            Some((text, Arc::new(calls)))
        }
        _ => None,
    };
    let driver = GrpcDriver::new(cfg).await.map_err(|e| match e {
        // The library names the file; the flag that gave it is the command line's to say.
        throng_grpc::GrpcError::Proto(_) => usage(format!("--proto {e}")),
        e if e.is_input() => usage(e.to_string()),
        e => CliError::Runtime(anyhow::anyhow!(e)),
    })?;
    Ok(match per_call {
        Some((text, calls)) => driver.rendered_per_call(text, calls),
        None => driver,
    })
}

/// Runs `throng run grpc://...` to its end: the driver is prepared (descriptors loaded, the
/// request encoded) before any load, so bad input exits 2 having sent nothing.
pub async fn run(a: &RunArgs, out: Outputs) -> Result<throng_run::Finished, CliError> {
    let (plan, cfg) = build(a)?;
    let containers = super::plan::containers(a)?;
    let connections = cfg.connections.unwrap_or(1) as u64;
    let driver = driver(cfg).await?;
    // A server stream's `(messages)` row takes thresholds too.
    let labels: Vec<String> = std::iter::once(driver.config().label())
        .chain(
            throng_core::Driver::parts(&driver)
                .into_iter()
                .map(|p| p.label),
        )
        .collect();
    let thresholds = parse_thresholds(&a.run.thresholds, "--threshold", &labels)?;
    ensure_open_files(connections)?;
    run_load(
        plan,
        Arc::new(driver),
        &thresholds,
        containers.as_ref(),
        out,
    )
    .await
}

/// `throng serve grpc`: the testbed's greeter, with reflection and health.
pub(crate) async fn serve(a: ServeArgs) -> Result<u8, CliError> {
    use throng_core::stages::parse_duration;
    use throng_testbed::{Delay, Fault, GrpcTarget};
    let d =
        |flag: &str, v: &str| parse_duration(v).map_err(|e| usage(format!("{flag} {v:?}: {e}")));
    let delay = match (&a.delay, &a.delay_max) {
        (None, _) => Delay::None,
        (Some(x), None) => Delay::Fixed(d("--delay", x)?),
        (Some(x), Some(y)) => Delay::Uniform(d("--delay", x)?, d("--delay-max", y)?),
    };
    // `--status` is HTTP's 200 by default; for gRPC it is a code from 0 (OK) to 16.
    let status = match a.status {
        200 => 0,
        c @ 0..=16 => c as u8,
        c => {
            return Err(usage(format!(
                "--status {c}: a gRPC status is a code from 0 (OK) to 16"
            )))
        }
    };
    let target = GrpcTarget {
        delay,
        status,
        stall: a
            .stall
            .as_deref()
            .map(super::serve::parse_stall)
            .transpose()?,
        fault: a.fault.map(|f| match f {
            FaultArg::Reset => Fault::Reset,
            FaultArg::Garbage => Fault::Garbage,
            FaultArg::Hang => Fault::Hang,
        }),
        tls: a.tls,
        ..GrpcTarget::default()
    };
    let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
        .await
        .map_err(|e| usage(format!("cannot listen on {}:{}: {e}", a.host, a.port)))?;
    let running = target
        .serve(listener)
        .await
        .context("starting the gRPC target")?;
    if let Some(pem) = &running.cert_pem {
        println!("{pem}");
    }
    println!("serving gRPC on {}", running.url());
    throng_run::wait_for_signal().await;
    eprintln!("served {} calls", running.calls());
    Ok(super::EXIT_OK)
}
