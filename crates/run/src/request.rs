//! The request flags protocols share, and the contract of a protocol's own flags: what
//! `throng run` flattens beside [`super::flags::RunFlags`] for the protocols it speaks, and
//! what a protocol of a library user's can offer the same way.
//!
//! The split: [`RequestFlags`] holds what means the same to every protocol that reads it
//! (headers, a body, timeouts, TLS trust, the label, streams a connection) and turns it into
//! core's neutral [`ClientOptions`]; each protocol's crate holds a struct of its own flags
//! (`--http2`, `--call`, `--sql`) implementing [`ProtocolFlags`], so that the command line
//! decides whether a flag applies to a run without knowing any protocol by name.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use clap::Args;
use throng_core::flags::{FlagsError, Request};
use throng_core::step::ClientOptions;

use crate::RunError;

impl From<FlagsError> for RunError {
    fn from(e: FlagsError) -> Self {
        match e {
            FlagsError::Input(m) => RunError::Input(m),
            FlagsError::Runtime(m) => RunError::Runtime(m),
        }
    }
}

impl From<RunError> for FlagsError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Input(m) => FlagsError::Input(m),
            RunError::Runtime(m) => FlagsError::Runtime(m),
        }
    }
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

/// The request flags as clap reads them, made into a [`Request`].
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
            label: a.label,
        }))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

pub use throng_core::flags::{BODY, HEADER, STREAMS};

/// A duration longer than zero, named by its flag when it is not.
pub fn positive(flag: &str, v: &str) -> Result<Duration, RunError> {
    Ok(throng_core::flags::positive(flag, v)?)
}

/// A protocol's own flags on `throng run` (a clap struct in the protocol's crate, registered
/// beside [`RequestFlags`] through a [`Registration`]): enough for the command line to say whether a flag applies to a
/// run's targets, to take a side's flags back in a grid of several protocols, and to give a
/// scenario's targets their options, without naming the protocol.
///
/// A protocol's flags know nothing of which protocol they are: a [`Registration`] pairs them
/// with the protocol's declaration ([`throng_core::step::Protocol`]: its name and schemes),
/// once, and the command line holds each protocol's flags beside its declaration
/// ([`Flagged`]).
pub trait ProtocolFlags: Send + Sync + std::fmt::Debug + std::any::Any {
    /// A copy, boxed (the command line's flags are cloned per side and level of a grid).
    fn clone_box(&self) -> Box<dyn ProtocolFlags>;
    /// The flags as their own type, for [`Flagged::get`], when they are wrapped.
    fn own(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// The flags given, as messages name them (`--call`).
    fn given(&self) -> Vec<&'static str>;
    /// Takes them all back.
    fn clear(&mut self);
    /// Which of [`RequestFlags::given`]'s it reads ([`HEADER`], [`BODY`], [`STREAMS`]).
    fn reads(&self) -> &'static [&'static str];
    /// Whether the flags make sense for a URL run of this protocol with `request`: `--streams`
    /// without `--http2` does not. Said before any load.
    fn check_url(&self, _request: &RequestFlags) -> Result<(), RunError> {
        Ok(())
    }
    /// Checks all that a URL run of `url` (with `plan`, from `load`'s flags) needs from these
    /// flags and `request` without reaching the target: what [`ProtocolFlags::url_run`] would
    /// refuse before connecting (HTTP's request, gRPC's call and message text, SQL's
    /// statements and parameters), said the same way. [`ProtocolFlags::check_url`] by default.
    fn check_offline(
        &self,
        _url: &str,
        request: &RequestFlags,
        _plan: &throng_core::RunPlan,
    ) -> Result<(), RunError> {
        self.check_url(request)
    }
    /// Its options for a scenario's targets, added to `options`; `targets` is how many of
    /// the scenario's targets are this protocol's, and a flag that then means nothing (one
    /// for a URL run only, or for targets the file has none of) is refused, naming `source`.
    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, RunError>;
    /// The run of `url` (one of the schemes its protocol declares): its plan from `load`'s flags,
    /// its driver from these flags and `request`, made for `shard` (this process's share of
    /// the plan), and checked against the target where the protocol can before any load (a
    /// SQL statement that does not prepare is [`RunError::Input`]).
    fn url_run<'a>(
        &'a self,
        url: &'a str,
        request: &'a RequestFlags,
        load: &'a crate::flags::RunFlags,
        shard: throng_core::Shard,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<UrlRun, RunError>> + 'a>>;
    /// Whether its flags watch servers beside any run, of whatever protocol (SQL's
    /// `--db-stats`): their idle window is read from them, so `--idle` needs no container.
    fn watches(&self) -> bool {
        false
    }
    /// Checks the URLs of the servers it watches, connecting to none.
    fn check_watched(&self, _request: &RequestFlags) -> Result<(), RunError> {
        Ok(())
    }
    /// The servers it watches, read through their idle window now and ready to be watched
    /// through the load of a run of `url` ([`crate::Run::databases`]); `None` when it
    /// watches none.
    fn watch<'a>(
        &'a self,
        _request: &'a RequestFlags,
        _load: &'a crate::flags::RunFlags,
        _url: &'a str,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Option<crate::Databases>, RunError>> + 'a>,
    > {
        Box::pin(async { Ok(None) })
    }
    /// Keeps of the servers it watches, and of the flags that name sides (HTTP's
    /// `--http2=SIDE`), those of one side of a grid: `pick` keeps a list's entries that name no
    /// side (`URL`) and the side's own (`SIDE=URL`, as `URL`).
    fn for_side(&mut self, _pick: &dyn Fn(&[String]) -> Vec<String>) {}
    /// Checks the flags that name sides against an A/B run's sides before any load: `own` are
    /// the names of the sides of this protocol, `others` the rest.
    fn check_sides(&self, _own: &[&str], _others: &[&str]) -> Result<(), RunError> {
        Ok(())
    }
    /// Whether `-d` is this protocol's request when an A/B run's sides speak several protocols
    /// that read it: it goes to the sides of those that say so (gRPC's with `--call`: its
    /// message), and to every reader only when none does. By default, whether any of its own
    /// flags is given.
    fn takes_body(&self) -> bool {
        !self.given().is_empty()
    }
    /// Fits a scenario's plan to these flags, for the file's `targets` of this protocol, and
    /// returns the connections that adds (gRPC's `--connections`: N connections a target).
    fn fit_scenario(
        &self,
        _plan: &mut throng_core::RunPlan,
        _request: &RequestFlags,
        _targets: usize,
    ) -> Result<u64, RunError> {
        Ok(0)
    }
}

/// A run of a URL, as its protocol's flags made it ([`ProtocolFlags::url_run`]).
#[derive(Debug)]
pub struct UrlRun {
    /// The run, headless and silent (the command line applies its outputs).
    pub run: crate::Run,
    /// The connections it opens at most (for the open-file limit).
    pub connections: u64,
}

impl UrlRun {
    /// The run of `url` under the plan `load`'s flags give, with the driver `make` builds for
    /// that plan, opening a connection a user at most.
    pub fn of<D: throng_core::Driver>(
        load: &crate::flags::RunFlags,
        url: &str,
        make: impl FnOnce(&throng_core::RunPlan) -> Result<D, RunError>,
    ) -> Result<UrlRun, RunError> {
        let plan = load.plan(url)?;
        let driver = make(&plan)?;
        let connections = plan.peak_concurrency();
        Ok(UrlRun {
            run: crate::Run::new(plan, std::sync::Arc::new(driver)),
            connections,
        })
    }
}

/// A protocol registered on the command line: its declaration and how its own flags are read.
/// A protocol crate is added to `throng run` by one of these in the registry's list.
pub struct Registration {
    /// The protocol's declaration: its name, schemes and steps.
    pub protocol: std::sync::Arc<dyn throng_core::step::StepProtocol>,
    augment: fn(clap::Command) -> clap::Command,
    parse: fn(&clap::ArgMatches) -> Result<Box<dyn ProtocolFlags>, clap::Error>,
    default: fn() -> Box<dyn ProtocolFlags>,
    /// Its testbed server, if it has one (`throng serve NAME`).
    pub server: Option<Server>,
}

/// A protocol's testbed server on the command line, `throng serve NAME`: its own flags (a
/// clap struct) and how it serves until stopped.
pub trait ServeFlags: clap::Args + clap::FromArgMatches + 'static {
    /// Its name after `throng serve` (`tcp`).
    const NAME: &'static str;
    /// What `throng serve --help` says of it.
    const ABOUT: &'static str;
    /// Serves until `stop` is ready (the command line's Ctrl-C or SIGTERM), saying where on
    /// standard output; a bad flag is [`RunError::Input`].
    fn serve(self, stop: Stop) -> Serving;
}

/// What a server waits on to stop.
pub type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A server serving until it is stopped.
pub type Serving = Pin<Box<dyn Future<Output = Result<(), RunError>>>>;

/// A registered protocol's server, type-erased for the command line.
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
    fn of<S: ServeFlags>() -> Server {
        Server {
            name: S::NAME,
            command: || S::augment_args(clap::Command::new(S::NAME)).about(S::ABOUT),
            run: |m, stop| Ok(S::from_arg_matches(m)?.serve(stop)),
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

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("protocol", &self.protocol.name())
            .finish_non_exhaustive()
    }
}

impl Registration {
    /// `protocol` with its own flags, the clap struct `F`.
    pub fn new<F>(protocol: impl throng_core::step::Protocol) -> Registration
    where
        F: ProtocolFlags + clap::Args + clap::FromArgMatches + Default,
    {
        Registration {
            protocol: std::sync::Arc::new(protocol),
            augment: F::augment_args,
            parse: |m| Ok(Box::new(F::from_arg_matches(m)?)),
            default: || Box::new(F::default()),
            server: None,
        }
    }

    /// The same with its testbed server, the clap struct `S` (`throng serve S::NAME`).
    pub fn serving<S: ServeFlags>(mut self) -> Registration {
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

/// A protocol's own flags beside its declaration: what the command line asks of a protocol
/// (the flags' [`ProtocolFlags`] through `Deref`), named and schemed as the protocol declares.
pub struct Flagged {
    /// The protocol's declaration.
    pub protocol: std::sync::Arc<dyn throng_core::step::StepProtocol>,
    /// Its flags.
    pub flags: Box<dyn ProtocolFlags>,
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

    /// Its flags as their own type (`F`), if they are.
    pub fn get<F: std::any::Any>(&self) -> Option<&F> {
        let any: &dyn std::any::Any = &*self.flags;
        self.flags.own().unwrap_or(any).downcast_ref::<F>()
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
    type Target = dyn ProtocolFlags;

    fn deref(&self) -> &Self::Target {
        &*self.flags
    }
}

impl std::ops::DerefMut for Flagged {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.flags
    }
}

/// A protocol's flags that implement core's contract ([`throng_core::flags::ProtocolFlags`]),
/// as the command line asks them: the plan made from the load flags, the URL run's driver made
/// into a [`crate::Run`], core's errors mapped onto [`RunError`].
#[derive(Debug, Clone)]
struct Typed<F>(F);

impl<F: throng_core::flags::ProtocolFlags> ProtocolFlags for Typed<F> {
    fn clone_box(&self) -> Box<dyn ProtocolFlags> {
        Box::new(self.clone())
    }

    fn own(&self) -> Option<&dyn std::any::Any> {
        Some(&self.0)
    }

    fn given(&self) -> Vec<&'static str> {
        self.0.given()
    }

    fn clear(&mut self) {
        self.0.clear()
    }

    fn reads(&self) -> &'static [&'static str] {
        self.0.reads()
    }

    fn check_url(&self, request: &RequestFlags) -> Result<(), RunError> {
        Ok(self.0.check_url(request)?)
    }

    fn check_offline(
        &self,
        url: &str,
        request: &RequestFlags,
        plan: &throng_core::RunPlan,
    ) -> Result<(), RunError> {
        Ok(self.0.check_offline(url, request, plan)?)
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, RunError> {
        Ok(self.0.scenario_options(options, targets, source)?)
    }

    fn url_run<'a>(
        &'a self,
        url: &'a str,
        request: &'a RequestFlags,
        load: &'a crate::flags::RunFlags,
        shard: throng_core::Shard,
    ) -> Pin<Box<dyn Future<Output = Result<UrlRun, RunError>> + 'a>> {
        Box::pin(async move {
            // A URL's password is in no message.
            let plan = load.plan(url).map_err(|e| match e {
                RunError::Input(m) => FlagsError::Input(m.replace(url, &throng_core::redact(url))),
                RunError::Runtime(m) => FlagsError::Runtime(m),
            });
            let rows = |labels: &[String]| -> Result<(), FlagsError> {
                load.thresholds(labels)?;
                Ok(())
            };
            let made = self
                .0
                .url_run(throng_core::flags::UrlArgs {
                    url,
                    request,
                    plan,
                    shard,
                    rows: &rows,
                })
                .await?;
            Ok(UrlRun {
                run: crate::Run::new(made.plan, std::sync::Arc::new(made.driver)),
                connections: made.connections,
            })
        })
    }

    fn watches(&self) -> bool {
        self.0.watches()
    }

    fn check_watched(&self, request: &RequestFlags) -> Result<(), RunError> {
        Ok(self.0.check_watched(request)?)
    }

    fn watch<'a>(
        &'a self,
        request: &'a RequestFlags,
        load: &'a crate::flags::RunFlags,
        url: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Option<crate::Databases>, RunError>> + 'a>> {
        Box::pin(async move {
            let args = throng_core::flags::WatchArgs {
                url,
                idle: load.idle.as_deref(),
                quiet: load.quiet,
            };
            Ok(self.0.watch(request, args).await?)
        })
    }

    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>) {
        self.0.for_side(pick)
    }

    fn check_sides(&self, own: &[&str], others: &[&str]) -> Result<(), RunError> {
        Ok(self.0.check_sides(own, others)?)
    }

    fn takes_body(&self) -> bool {
        self.0.takes_body()
    }

    fn fit_scenario(
        &self,
        plan: &mut throng_core::RunPlan,
        request: &RequestFlags,
        targets: usize,
    ) -> Result<u64, RunError> {
        Ok(self.0.fit_scenario(plan, request, targets)?)
    }
}

impl Registration {
    /// `protocol` with its own flags, `F`: core's contract, read by clap.
    pub fn typed<F>(protocol: impl throng_core::step::Protocol) -> Registration
    where
        F: throng_core::flags::ProtocolFlags + clap::Args + clap::FromArgMatches + Default,
    {
        Registration {
            protocol: std::sync::Arc::new(protocol),
            augment: F::augment_args,
            parse: |m| Ok(Box::new(Typed(F::from_arg_matches(m)?))),
            default: || Box::new(Typed(F::default())),
            server: None,
        }
    }

    /// The same with its testbed server, `S`: core's contract, read by clap
    /// (`throng serve S::NAME`).
    pub fn serving_typed<S>(mut self) -> Registration
    where
        S: throng_core::flags::ServeFlags + clap::Args + clap::FromArgMatches,
    {
        self.server = Some(Server {
            name: S::NAME,
            command: || S::augment_args(clap::Command::new(S::NAME)).about(S::ABOUT),
            run: |m, stop| {
                let serving = S::from_arg_matches(m)?.serve(stop);
                Ok(Box::pin(async move { Ok(serving.await?) }))
            },
        });
        self
    }
}
