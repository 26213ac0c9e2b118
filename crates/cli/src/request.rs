//! The request flags protocols share, and each protocol's own flags as the command line holds
//! them: [`RequestFlags`] (clap's reading of core's plain [`Request`]) flattened beside
//! [`crate::RunFlags`], and every registered protocol's flags struct behind [`AnyFlags`],
//! paired with its declaration by its registration ([`Registration`], [`Flagged`]).
//!
//! A protocol implements core's [`throng_core::flags::ProtocolFlags`], which knows neither clap
//! nor the run; [`AnyFlags`] is that contract with its types erased, for every protocol at
//! once: the plan made from the load flags, the URL run's driver made into a
//! [`throng_run::Run`], core's errors as [`RunError`]s.

use std::any::Any;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use clap::Args;
use throng_core::flags::{
    FlagsError, ProtocolFlags, Request, ServeFlags, Stop, UrlArgs, WatchArgs,
};
use throng_core::step::{ClientOptions, StepProtocol};
use throng_core::{RunPlan, Shard};
use throng_run::{Databases, Run, RunError};

use crate::flags::RunFlags;

pub use throng_core::flags::{Shared, BODY, HEADER, STREAMS};

/// A flag of `throng run` given for some protocols only: a part of the shared request (found by
/// its value), or one of a protocol's own (as its messages name it; a protocol's own flags are
/// taken back all at once, [`AnyFlags::clear`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Given {
    /// `-H`, `-d` or `--streams`.
    Shared(Shared),
    /// A protocol's own (`--call`).
    Own(&'static str),
}

impl std::fmt::Display for Given {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Given::Shared(s) => s.fmt(f),
            Given::Own(flag) => f.write_str(flag),
        }
    }
}

/// A duration longer than zero, named by its flag when it is not.
pub fn positive(flag: &str, v: &str) -> Result<std::time::Duration, RunError> {
    Ok(throng_core::flags::positive(flag, v)?)
}

/// The request flags every protocol may read, as clap reads them: core's plain
/// [`Request`] (through `Deref`); which ones a protocol reads, it says
/// ([`ProtocolFlags::reads`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFlags(pub Request);

impl std::ops::Deref for RequestFlags {
    type Target = Request;

    fn deref(&self) -> &Request {
        &self.0
    }
}

impl std::ops::DerefMut for RequestFlags {
    fn deref_mut(&mut self) -> &mut Request {
        &mut self.0
    }
}

/// The request flags as clap reads them, made into a [`Request`]. Its fields are
/// [`Request`]'s again, on purpose: clap's derive reads attributes on the struct it fills, and
/// core knows no clap (a `cfg_attr(feature = "clap", derive(clap::Args))` on `Request` would
/// put clap back below the command line, which STYLE's "command line on top" rules out); a
/// hand-written `clap::Args` would list the same fields as `Arg`s and read them back by name.
/// A field added to `Request` and not here fails to compile in `from_arg_matches` below.
#[derive(Debug, Clone, Args)]
struct RequestArgs {
    /// A request header, 'name: value' (repeatable); gRPC: metadata.
    #[arg(short = 'H', long = "header", help_heading = "Request")]
    headers: Vec<String>,
    /// The request body, or @FILE to read it from a file; gRPC: the message as JSON. A/B sides
    /// of HTTP and gRPC: the gRPC sides' message with --call (the HTTP sides' body with -m
    /// other than GET).
    #[arg(short = 'd', long = "body", help_heading = "Request")]
    body: Option<String>,
    /// HTTP/2 and gRPC: how many users or in-flight requests share one connection [default:
    /// 100].
    #[arg(long, help_heading = "Request")]
    streams: Option<usize>,
    /// Per-request timeout, from send to the last byte of the response.
    #[arg(short = 't', long, default_value = "30s", help_heading = "Request")]
    timeout: String,
    /// Connect timeout (TCP and TLS).
    #[arg(long, default_value = "10s", help_heading = "Request")]
    connect_timeout: String,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long, help_heading = "Request")]
    insecure: bool,
    /// Trust the PEM certificates in this file instead of the built-in roots.
    #[arg(long, help_heading = "Request")]
    cacert: Option<PathBuf>,
    /// Present the PEM certificate (chain) in this file to TLS servers that ask for one (mutual
    /// TLS); with --key.
    #[arg(long, value_name = "FILE", help_heading = "Request")]
    cert: Option<PathBuf>,
    /// The PEM private key of --cert (PKCS#8, PKCS#1 RSA or SEC1 EC).
    #[arg(long, value_name = "FILE", help_heading = "Request")]
    key: Option<PathBuf>,
    /// The row label in results [default: METHOD /path].
    #[arg(long, help_heading = "Request")]
    label: Option<String>,
}

impl clap::Args for RequestFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        RequestArgs::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        RequestArgs::augment_args_for_update(cmd)
    }
}

impl clap::FromArgMatches for RequestFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let a = RequestArgs::from_arg_matches(matches)?;
        Ok(RequestFlags(Request {
            headers: a.headers,
            body: a.body,
            streams: a.streams,
            timeout: a.timeout,
            connect_timeout: a.connect_timeout,
            insecure: a.insecure,
            cacert: a.cacert,
            cert: a.cert,
            key: a.key,
            label: a.label,
        }))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// A protocol's own flags, whichever protocol's: core's
/// [`ProtocolFlags`](throng_core::flags::ProtocolFlags) with its types erased (every
/// implementation is one), as the command line asks them. The methods are the contract's; see
/// there.
pub trait AnyFlags: Send + Sync + std::fmt::Debug + Any {
    /// A copy, boxed (the command line's flags are cloned per side and level of a grid).
    fn clone_box(&self) -> Box<dyn AnyFlags>;
    /// The flags given, as messages name them (`--call`).
    fn given(&self) -> Vec<&'static str>;
    /// Takes them all back.
    fn clear(&mut self);
    /// Which of [`Request::given`]'s it reads ([`HEADER`], [`BODY`], [`STREAMS`]).
    fn reads(&self) -> &'static [Shared];
    /// Whether the flags make sense for a URL run of this protocol with `request`.
    fn check_url(&self, request: &Request) -> Result<(), RunError>;
    /// Checks all that a URL run of `url` under `plan` needs, without reaching the target.
    fn check_offline(&self, url: &str, request: &Request, plan: &RunPlan) -> Result<(), RunError>;
    /// Its options for a scenario's `targets` of its protocol, added to `options`.
    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, RunError>;
    /// The run of `url`: its plan from `load`'s flags (a URL's password in no message), its
    /// driver from these flags and `request`, made for `shard`, headless and silent, and
    /// checked against `load`'s thresholds.
    fn url_run<'a>(
        &'a self,
        url: &'a str,
        request: &'a Request,
        load: &'a RunFlags,
        shard: Shard,
    ) -> Pin<Box<dyn Future<Output = Result<UrlRun, RunError>> + 'a>>;
    /// Whether its flags watch servers beside any run (SQL's `--db-stats`).
    fn watches(&self) -> bool;
    /// Checks the URLs of the servers it watches, connecting to none.
    fn check_watched(&self, request: &Request) -> Result<(), RunError>;
    /// The servers it watches, read through their idle window (`load`'s `--idle`) now.
    fn watch<'a>(
        &'a self,
        request: &'a Request,
        load: &'a RunFlags,
        url: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<Databases>, RunError>> + 'a>>;
    /// Keeps of the flags that name sides those of one side of a grid.
    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>);
    /// Checks the flags that name sides against an A/B run's sides.
    fn check_sides(&self, own: &[&str], others: &[&str]) -> Result<(), RunError>;
    /// Whether `-d` is this protocol's request when sides of several protocols read it.
    fn takes_body(&self) -> bool;
    /// Fits a scenario's plan to these flags; the connections that adds.
    fn fit_scenario(
        &self,
        plan: &mut RunPlan,
        request: &Request,
        targets: usize,
    ) -> Result<u64, RunError>;
}

impl<F: ProtocolFlags> AnyFlags for F {
    fn clone_box(&self) -> Box<dyn AnyFlags> {
        Box::new(self.clone())
    }

    fn given(&self) -> Vec<&'static str> {
        ProtocolFlags::given(self)
    }

    fn clear(&mut self) {
        ProtocolFlags::clear(self)
    }

    fn reads(&self) -> &'static [Shared] {
        ProtocolFlags::reads(self)
    }

    fn check_url(&self, request: &Request) -> Result<(), RunError> {
        ProtocolFlags::check_url(self, request).map_err(RunError::from)
    }

    fn check_offline(&self, url: &str, request: &Request, plan: &RunPlan) -> Result<(), RunError> {
        ProtocolFlags::check_offline(self, url, request, plan).map_err(RunError::from)
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, RunError> {
        ProtocolFlags::scenario_options(self, options, targets, source).map_err(RunError::from)
    }

    fn url_run<'a>(
        &'a self,
        url: &'a str,
        request: &'a Request,
        load: &'a RunFlags,
        shard: Shard,
    ) -> Pin<Box<dyn Future<Output = Result<UrlRun, RunError>> + 'a>> {
        Box::pin(async move {
            // A URL's password is in no message.
            let plan = load.plan(url).map_err(|e| match e {
                RunError::Input(m) => FlagsError::Input(m.replace(url, &throng_core::redact(url))),
                RunError::Runtime(m) => FlagsError::Runtime(m),
            });
            let rows = |labels: &[String]| -> Result<(), FlagsError> {
                load.thresholds(labels).map_err(FlagsError::from)?;
                Ok(())
            };
            let made = ProtocolFlags::url_run(
                self,
                UrlArgs {
                    url,
                    request,
                    plan,
                    shard,
                    rows: &rows,
                },
            )
            .await
            .map_err(RunError::from)?;
            Ok(UrlRun {
                run: Run::new(made.plan, Arc::new(made.driver)),
                connections: made.connections,
            })
        })
    }

    fn watches(&self) -> bool {
        ProtocolFlags::watches(self)
    }

    fn check_watched(&self, request: &Request) -> Result<(), RunError> {
        ProtocolFlags::check_watched(self, request).map_err(RunError::from)
    }

    fn watch<'a>(
        &'a self,
        request: &'a Request,
        load: &'a RunFlags,
        url: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<Databases>, RunError>> + 'a>> {
        Box::pin(async move {
            let args = WatchArgs {
                url,
                idle: load.idle.as_deref(),
                quiet: load.quiet,
            };
            ProtocolFlags::watch(self, request, args)
                .await
                .map_err(RunError::from)
        })
    }

    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>) {
        ProtocolFlags::for_side(self, pick)
    }

    fn check_sides(&self, own: &[&str], others: &[&str]) -> Result<(), RunError> {
        ProtocolFlags::check_sides(self, own, others).map_err(RunError::from)
    }

    fn takes_body(&self) -> bool {
        ProtocolFlags::takes_body(self)
    }

    fn fit_scenario(
        &self,
        plan: &mut RunPlan,
        request: &Request,
        targets: usize,
    ) -> Result<u64, RunError> {
        ProtocolFlags::fit_scenario(self, plan, request, targets).map_err(RunError::from)
    }
}

/// A run of a URL, as a protocol's flags made it ([`AnyFlags::url_run`]).
#[derive(Debug)]
pub struct UrlRun {
    /// The run, headless and silent (the command line applies its outputs).
    pub run: Run,
    /// The connections it opens at most (for the open-file limit).
    pub connections: u64,
}

/// A protocol registered on the command line: its declaration and how its own flags are read.
/// The registry's line for a protocol ([`throng_protocols::registry`]) makes one.
pub struct Registration {
    /// The protocol's declaration: its name, schemes and steps.
    pub protocol: Arc<dyn StepProtocol>,
    augment: fn(clap::Command) -> clap::Command,
    parse: fn(&clap::ArgMatches) -> Result<Box<dyn AnyFlags>, clap::Error>,
    default: fn() -> Box<dyn AnyFlags>,
    /// Its testbed server, if it has one (`throng serve NAME`).
    pub server: Option<Server>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("protocol", &self.protocol.name())
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// `protocol` with its own flags, the clap struct `F`.
    pub fn new<F>(protocol: Arc<dyn StepProtocol>) -> Registration
    where
        F: ProtocolFlags + clap::Args + clap::FromArgMatches + Default,
    {
        Registration {
            protocol,
            augment: F::augment_args,
            parse: |m| Ok(Box::new(F::from_arg_matches(m)?)),
            default: || Box::new(F::default()),
            server: None,
        }
    }

    /// The same with its testbed server, the clap struct `S` (`throng serve S::NAME`).
    pub fn serving<S>(mut self) -> Registration
    where
        S: ServeFlags + clap::Args + clap::FromArgMatches,
    {
        self.server = Some(Server::of::<S>());
        self
    }

    /// Adds its flags to `cmd`.
    pub fn augment(&self, cmd: clap::Command) -> clap::Command {
        (self.augment)(cmd)
    }

    /// Its flags as `matches` give them.
    pub fn parse(&self, matches: &clap::ArgMatches) -> Result<Flagged, clap::Error> {
        Ok(Flagged {
            protocol: self.protocol.clone(),
            flags: (self.parse)(matches)?,
        })
    }

    /// Its flags, none given.
    pub fn default_flags(&self) -> Flagged {
        Flagged {
            protocol: self.protocol.clone(),
            flags: (self.default)(),
        }
    }
}

/// The registrations of every protocol of this build, in the registry's order.
pub fn registrations() -> Vec<Registration> {
    struct Registrations(Vec<Registration>);
    impl throng_protocols::Registrar for Registrations {
        fn protocol(&mut self, _protocol: Arc<dyn StepProtocol>) {
            // Every protocol of the registry has flags; one without none to offer here.
        }

        fn flags<F>(&mut self, protocol: Arc<dyn StepProtocol>)
        where
            F: ProtocolFlags + clap::Args + clap::FromArgMatches + Default,
        {
            self.0.push(Registration::new::<F>(protocol));
        }

        fn server<S>(&mut self)
        where
            S: ServeFlags + clap::Args + clap::FromArgMatches,
        {
            if let Some(last) = self.0.pop() {
                self.0.push(last.serving::<S>());
            }
        }
    }
    let mut all = Registrations(Vec::new());
    throng_protocols::registry(&mut all);
    all.0
}

/// A server serving until it is stopped.
pub type Serving = Pin<Box<dyn Future<Output = Result<(), RunError>>>>;

/// A registered protocol's testbed server, type-erased for the command line.
#[derive(Clone, Copy)]
pub struct Server {
    /// Its name after `throng serve`.
    pub name: &'static str,
    command: fn() -> clap::Command,
    run: fn(&clap::ArgMatches, Stop) -> Result<Serving, clap::Error>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("name", &self.name).finish()
    }
}

impl Server {
    fn of<S: ServeFlags + clap::Args + clap::FromArgMatches>() -> Server {
        Server {
            name: S::NAME,
            command: || S::augment_args(clap::Command::new(S::NAME)).about(S::ABOUT),
            run: |m, stop| {
                let serving = S::from_arg_matches(m)?.serve(stop);
                Ok(Box::pin(
                    async move { serving.await.map_err(RunError::from) },
                ))
            },
        }
    }

    /// Its subcommand of `throng serve`.
    pub fn command(&self) -> clap::Command {
        (self.command)()
    }

    /// Serves as `matches` (its subcommand's) say, until `stop`.
    pub fn serve(&self, matches: &clap::ArgMatches, stop: Stop) -> Result<Serving, clap::Error> {
        (self.run)(matches, stop)
    }
}

/// A protocol's own flags beside its declaration: what the command line asks of a protocol
/// (the flags' [`AnyFlags`] through `Deref`), named and schemed as the protocol declares.
pub struct Flagged {
    /// The protocol's declaration.
    pub protocol: Arc<dyn StepProtocol>,
    /// Its flags.
    pub flags: Box<dyn AnyFlags>,
}

impl Flagged {
    /// The protocol's name, as it declares it.
    pub fn name(&self) -> &'static str {
        self.protocol.name()
    }

    /// Its URL schemes, as it declares them.
    pub fn schemes(&self) -> &'static [&'static str] {
        self.protocol.schemes()
    }

    /// Whether these are the flags of `protocol` (the same declaration's type, whatever its
    /// name).
    pub fn is(&self, protocol: &dyn StepProtocol) -> bool {
        throng_core::step::same_protocol(&*self.protocol, protocol)
    }

    /// Its flags as their own type (`F`), if they are.
    pub fn get<F: Any>(&self) -> Option<&F> {
        let any: &dyn Any = &*self.flags;
        any.downcast_ref::<F>()
    }
}

impl Clone for Flagged {
    fn clone(&self) -> Flagged {
        Flagged {
            protocol: self.protocol.clone(),
            flags: self.flags.clone_box(),
        }
    }
}

impl std::fmt::Debug for Flagged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flagged")
            .field("protocol", &self.protocol.name())
            .field("flags", &self.flags)
            .finish()
    }
}

impl std::ops::Deref for Flagged {
    type Target = dyn AnyFlags;

    fn deref(&self) -> &Self::Target {
        &*self.flags
    }
}

impl std::ops::DerefMut for Flagged {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.flags
    }
}
