//! gRPC's own flags on `throng run` (`clap` feature): `--call`, `--proto`, `--protoset`,
//! `--connections`, ..., and the URL run they make with the shared request flags:
//! `throng run grpc://…` as a one-step plan on its connections.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use throng_core::at_least_one;
use throng_core::flags::{
    positive, FlagsError, ProtocolFlags, Request, UrlArgs, UrlRun, BODY, HEADER, STREAMS,
};
use throng_core::step::{ClientOptions, Render, StaticOnly};
use throng_core::steps::Steps;
use throng_core::RunPlan;
use throng_template::Calls;

use crate::{Descriptors, GrpcClient, GrpcConfig, GrpcError, GrpcOptions};

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// gRPC's flags of `throng run` (grpc:// and grpcs:// targets).
#[derive(Debug, Clone, Default, Args)]
pub struct GrpcFlags {
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
    #[arg(long, value_name = "N", help_heading = "gRPC", value_parser = at_least_one::<usize>)]
    pub connections: Option<usize>,
    /// gRPC, client streaming and bidi: pause this long before each message after the first
    /// [default: send them as fast as the stream takes them].
    #[arg(long, value_name = "DURATION", help_heading = "gRPC")]
    pub message_interval: Option<String>,
}

/// `throng run grpc://…`'s one-step plan: its `-d` rendered per call when it holds templates.
pub type UrlDriver = Steps<GrpcClient, Arc<dyn Render + Send + Sync>>;

impl GrpcFlags {
    /// Where the methods' descriptors come from.
    fn descriptors(&self) -> Result<Descriptors, FlagsError> {
        Ok(match (&self.protoset, self.protos.is_empty()) {
            (Some(p), _) => Descriptors::Protoset(p.clone()),
            (None, false) => Descriptors::Protos {
                files: self.protos.clone(),
                includes: self.import_paths.clone(),
            },
            (None, true) if !self.import_paths.is_empty() => {
                return Err(input("-I/--import-path is for --proto files; give one"))
            }
            (None, true) => Descriptors::Reflection,
        })
    }

    /// The gRPC configuration of a run of `url` with `request`, every bad value named with its
    /// flag.
    pub fn config(&self, url: &str, request: &Request) -> Result<GrpcConfig, FlagsError> {
        let call = self.call.as_deref().ok_or_else(|| {
            input(format!(
                "{url}: a gRPC run needs --call package.Service/Method"
            ))
        })?;
        let mut cfg = GrpcConfig::new(url, call).map_err(|e| match e {
            GrpcError::Call(_) => input(format!("--call {e}")),
            other => input(other.to_string()),
        })?;
        cfg.service_method().map_err(|e| input(e.to_string()))?;
        cfg.descriptors = self.descriptors()?;
        for h in &request.headers {
            cfg.metadata(h).map_err(|e| input(format!("-H {e}")))?;
        }
        crate::metadata(&cfg.metadata).map_err(|e| input(format!("-H {e}")))?;
        cfg.data = request.body_text()?;
        cfg.timeout = request.timeout()?;
        cfg.connect_timeout = request.connect_timeout()?;
        cfg.message_interval = self
            .message_interval
            .as_deref()
            .map(|v| positive("--message-interval", v))
            .transpose()?;
        cfg.streams = request.streams()?;
        cfg.connections = self.connections;
        let identity = request.identity()?;
        if (request.insecure || request.cacert.is_some()) && !cfg.is_tls() {
            return Err(input(format!(
                "--insecure and --cacert apply to grpcs:// targets; {url} is plain grpc"
            )));
        }
        if identity.is_some() && !cfg.is_tls() {
            return Err(input(format!(
                "--cert and --key apply to grpcs:// targets; {url} is plain grpc"
            )));
        }
        cfg.insecure = request.insecure;
        cfg.cacert = request.cacert.clone();
        cfg.identity = identity;
        cfg.label = request.label.clone();
        Ok(cfg)
    }

    /// The one-step plan of a run of `url` under `plan` (its connections fitted to the load,
    /// see [`fit_connections`], and its threads no more than them), and the connections.
    /// A message with templates (`{{ seq() }}`) is rendered per call, and checked against the
    /// method before the load through one rendering of its own (a count apart, so the run's
    /// `seq()` starts at 0). Bad input is [`FlagsError::Input`]; a server that did not answer in
    /// time is the run's failure, [`FlagsError::Runtime`].
    pub async fn url_driver(
        &self,
        url: &str,
        request: &Request,
        plan: &mut RunPlan,
    ) -> Result<(UrlDriver, u64), FlagsError> {
        let mut cfg = self.config(url, request)?;
        let connections = fit_connections(plan, cfg.connections, cfg.streams)?;
        cfg.connections = Some(connections);
        let per_call = match cfg.data.as_deref() {
            Some(d) if d.contains("{{") || d.contains("{%") => {
                let bad = |e: String| input(format!("-d/--body's template: {e}"));
                let mut calls = Calls::default();
                let text = calls.compile(d).map_err(bad)?;
                let mut probe = Calls::default();
                let sample = probe
                    .compile(d)
                    .and_then(|t| probe.render(&t))
                    .map_err(bad)?;
                cfg.data = Some(sample);
                Some((text, calls))
            }
            _ => None,
        };
        // The library names the file or the message; the flag that gave it is said here.
        let named = |e: GrpcError| match e {
            GrpcError::Proto(_) => input(format!("--proto {e}")),
            GrpcError::Message(m) => input(format!("-d/--body: {m}")),
            e if e.is_input() => input(e.to_string()),
            e => FlagsError::Runtime(e.to_string()),
        };
        let driver = match per_call {
            None => GrpcClient::one_step(cfg)
                .await
                .map_err(named)?
                .rendered_by(Arc::new(StaticOnly) as Arc<dyn Render + Send + Sync>),
            Some((text, calls)) => GrpcClient::one_step_per_call(
                cfg,
                text,
                Arc::new(calls) as Arc<dyn Render + Send + Sync>,
            )
            .await
            .map_err(named)?,
        };
        Ok((driver, connections as u64))
    }
}

/// The HTTP/2 connections that carry a gRPC target's calls, in all: `connections` (the flag's
/// value) if it fits the load, by default the fewest that carry the users (or in-flight
/// requests) at `streams` each, which measured the cheapest (README: at `-c 50`, one
/// connection took 4.3-4.8 CPU-seconds per million calls, two 4.9-6.5, ten 6.9-7.5, fifty
/// 16-19). No more users than `N × streams`, nor fewer than `N`; and no more worker threads in
/// `plan` than connections (a thread drives its own, and each worker has at least one).
pub fn fit_connections(
    plan: &mut RunPlan,
    connections: Option<usize>,
    streams: usize,
) -> Result<usize, FlagsError> {
    let users = plan.shard.share(plan.peak_concurrency());
    let n = match connections {
        Some(n) if n as u64 > users => {
            return Err(input(format!(
                "--connections {n}: more connections than the {users} users (or requests in \
                 flight) that would use them"
            )))
        }
        Some(n) => n,
        None => users.div_ceil(streams as u64).max(1) as usize,
    };
    let most = n as u64 * streams as u64;
    if users > most {
        return Err(input(format!(
            "--connections {n} with --streams {streams} carry {most} calls at once, and the \
             load has {users}: raise --streams or --connections"
        )));
    }
    throng_h2::pool::fit_threads(plan, n);
    Ok(n)
}

impl ProtocolFlags for GrpcFlags {
    type Driver = UrlDriver;

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        let mut say = |on: bool, flag| {
            if on {
                given.push(flag)
            }
        };
        say(self.connections.is_some(), "--connections");
        say(self.call.is_some(), "--call");
        say(!self.protos.is_empty(), "--proto");
        say(!self.import_paths.is_empty(), "-I/--import-path");
        say(self.protoset.is_some(), "--protoset");
        say(self.message_interval.is_some(), "--message-interval");
        given
    }

    fn clear(&mut self) {
        *self = GrpcFlags::default();
    }

    fn reads(&self) -> &'static [throng_core::flags::Shared] {
        &[HEADER, BODY, STREAMS]
    }

    fn check_offline(
        &self,
        url: &str,
        request: &Request,
        _plan: &RunPlan,
    ) -> Result<(), FlagsError> {
        self.check_url(request)?;
        self.config(url, request).map(|_| ())
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, FlagsError> {
        if self.call.is_some() || self.message_interval.is_some() {
            return Err(input(
                "--call and --message-interval do not apply to a scenario file: its grpc steps \
                 say what they call and send",
            ));
        }
        let none = |flags: &str, what: &str| {
            input(format!(
                "{flags} {what}, and {source} has no grpc:// target"
            ))
        };
        if (!self.protos.is_empty() || self.protoset.is_some()) && targets == 0 {
            return Err(none("--proto and --protoset", "describe gRPC methods"));
        }
        if self.connections.is_some() && targets == 0 {
            return Err(none("--connections", "applies to grpc:// targets"));
        }
        self.descriptors()?;
        Ok(options.with(GrpcOptions {
            protos: self.protos.clone(),
            import_paths: self.import_paths.clone(),
            protoset: self.protoset.clone(),
            connections: self.connections,
        }))
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        let mut plan = args.plan?;
        // A threshold naming no row the call can have is bad input (exit 2), said before the
        // server is asked for its descriptors (one that cannot be reached is exit 1); the rows
        // are checked again once the method is known.
        let label = self.config(args.url, args.request)?.label();
        (args.rows)(&[label.clone(), crate::step::messages_label(&label)])?;
        let (driver, connections) = self.url_driver(args.url, args.request, &mut plan).await?;
        Ok(UrlRun {
            plan,
            driver,
            connections,
        })
    }

    fn fit_scenario(
        &self,
        plan: &mut RunPlan,
        request: &Request,
        targets: usize,
    ) -> Result<u64, FlagsError> {
        // Each gRPC target's calls on N connections in all, as for `throng run grpc://...`.
        let Some(n) = self.connections else {
            return Ok(0);
        };
        fit_connections(plan, Some(n), request.streams()?)?;
        Ok((n * targets) as u64)
    }
}
