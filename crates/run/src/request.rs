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
use throng_core::stages::parse_duration;
use throng_core::step::ClientOptions;

use crate::RunError;

fn input(m: impl Into<String>) -> RunError {
    RunError::Input(m.into())
}

/// The request flags every protocol may read; which ones it does, it says
/// ([`ProtocolFlags::reads`]).
#[derive(Debug, Clone, Args)]
pub struct RequestFlags {
    /// A request header, 'name: value' (repeatable); gRPC: metadata.
    #[arg(short = 'H', long = "header", help_heading = "Request")]
    pub headers: Vec<String>,
    /// The request body, or @FILE to read it from a file; gRPC: the message as JSON. A/B sides
    /// of HTTP and gRPC: the gRPC sides' message with --call (the HTTP sides' body with -m
    /// other than GET).
    #[arg(short = 'd', long = "body", help_heading = "Request")]
    pub body: Option<String>,
    /// HTTP/2 and gRPC: how many users or in-flight requests share one connection [default:
    /// 100].
    #[arg(long, help_heading = "Request")]
    pub streams: Option<usize>,
    /// Per-request timeout, from send to the last byte of the response.
    #[arg(short = 't', long, default_value = "30s", help_heading = "Request")]
    pub timeout: String,
    /// Connect timeout (TCP and TLS).
    #[arg(long, default_value = "10s", help_heading = "Request")]
    pub connect_timeout: String,
    /// Accept any TLS certificate.
    #[arg(short = 'k', long, help_heading = "Request")]
    pub insecure: bool,
    /// Trust the PEM certificates in this file instead of the built-in roots.
    #[arg(long, help_heading = "Request")]
    pub cacert: Option<PathBuf>,
    /// The row label in results [default: METHOD /path].
    #[arg(long, help_heading = "Request")]
    pub label: Option<String>,
}

impl Default for RequestFlags {
    fn default() -> Self {
        RequestFlags {
            headers: Vec::new(),
            body: None,
            streams: None,
            timeout: "30s".into(),
            connect_timeout: "10s".into(),
            insecure: false,
            cacert: None,
            label: None,
        }
    }
}

/// `-H`.
pub const HEADER: &str = "-H/--header";
/// `-d`.
pub const BODY: &str = "-d/--body";
/// `--streams`.
pub const STREAMS: &str = "--streams";

impl RequestFlags {
    /// The flags given that a protocol may not read (`-H`, `-d`, `--streams`); the rest apply
    /// to every protocol.
    pub fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if !self.headers.is_empty() {
            given.push(HEADER);
        }
        if self.body.is_some() {
            given.push(BODY);
        }
        if self.streams.is_some() {
            given.push(STREAMS);
        }
        given
    }

    /// Takes back the flag `flag` names (one of [`RequestFlags::given`]'s).
    pub fn clear(&mut self, flag: &str) {
        match flag {
            HEADER => self.headers.clear(),
            BODY => self.body = None,
            STREAMS => self.streams = None,
            _ => {}
        }
    }

    /// `--streams`, or its default (100).
    pub fn streams(&self) -> Result<usize, RunError> {
        match self.streams.unwrap_or(100) {
            0 => Err(input("--streams must be at least 1")),
            n => Ok(n),
        }
    }

    /// `-t/--timeout`.
    pub fn timeout(&self) -> Result<Duration, RunError> {
        positive("-t/--timeout", &self.timeout)
    }

    /// `--connect-timeout`.
    pub fn connect_timeout(&self) -> Result<Duration, RunError> {
        positive("--connect-timeout", &self.connect_timeout)
    }

    /// `-d`'s bytes: as written, or a file's (`@FILE`).
    pub fn body(&self) -> Result<Option<Vec<u8>>, RunError> {
        let Some(body) = &self.body else {
            return Ok(None);
        };
        match body.strip_prefix('@') {
            Some(path) => std::fs::read(path)
                .map(Some)
                .map_err(|e| input(format!("-d @{path}: cannot read the file: {e}"))),
            None => Ok(Some(body.clone().into_bytes())),
        }
    }

    /// `-d` as text (a file's must be UTF-8).
    pub fn body_text(&self) -> Result<Option<String>, RunError> {
        self.body()?
            .map(|b| {
                String::from_utf8(b).map_err(|_| {
                    input(format!(
                        "-d {}: not UTF-8 text",
                        self.body.as_deref().unwrap_or_default()
                    ))
                })
            })
            .transpose()
    }

    /// Each `-H` as `(name, value)`, trimmed; a line without `:` is refused.
    pub fn headers(&self) -> Result<Vec<(String, String)>, RunError> {
        self.headers
            .iter()
            .map(|h| match h.split_once(':') {
                Some((n, v)) if !n.trim().is_empty() => {
                    Ok((n.trim().to_string(), v.trim().to_string()))
                }
                _ => Err(input(format!(
                    "-H {h:?}: write 'name: value', e.g. -H 'accept: application/json'"
                ))),
            })
            .collect()
    }

    /// The neutral options of every target: timeouts, TLS trust, streams and headers.
    pub fn options(&self) -> Result<ClientOptions, RunError> {
        Ok(ClientOptions {
            timeout: self.timeout()?,
            connect_timeout: self.connect_timeout()?,
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            streams: self.streams()?,
            headers: self.headers()?,
            ..ClientOptions::default()
        })
    }
}

/// A duration longer than zero, named by its flag when it is not.
pub fn positive(flag: &str, v: &str) -> Result<Duration, RunError> {
    let d = parse_duration(v).map_err(|e| {
        input(format!(
            "{flag} {v:?}: not a duration ({e}); write e.g. 30s, 2m, 250ms"
        ))
    })?;
    if d.is_zero() {
        return Err(input(format!(
            "{flag} {v:?}: must be longer than zero (every request would fail at once)"
        )));
    }
    Ok(d)
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
    pub fn get<F: ProtocolFlags>(&self) -> Option<&F> {
        let any: &dyn std::any::Any = &*self.flags;
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
