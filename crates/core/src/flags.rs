//! The contract a protocol's own flags implement, without clap: what the command line asks of
//! them without knowing the protocol. A protocol's crate holds a struct of its flags (`--http2`,
//! `--call`, `--sql`), which may derive clap's `Args` behind the crate's `clap` feature, and
//! implements [`ProtocolFlags`] for it; the command line (the `throng-cli` crate, the one crate
//! that knows clap) registers it beside the protocol's declaration and hands it plain data: the
//! [`Request`] every protocol may read, and for a URL run the [`RunPlan`] already made from the
//! load flags ([`UrlArgs`]). The protocol answers with core types: a [`UrlRun`] (its driver
//! and the connections it opens), servers to watch beside the run ([`Watched`]), or a
//! [`FlagsError`].
//!
//! So a protocol's crate depends on core, never on the run or the command line, and a flag is
//! found by the registration that carries it, not by its protocol's name.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use crate::stages::parse_duration;
use crate::step::{ClientOptions, Identity, Render, Text};
use crate::watch::Watched;
use crate::{Driver, RunPlan, Shard};

/// Why flags could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagsError {
    /// Bad input, found before any load (a flag's value, a file that cannot be read, a
    /// statement that does not prepare): the command line's exit code 2.
    #[error("{0}")]
    Input(String),
    /// Something failed that the input did not cause (a server that cannot be reached to ask it
    /// for its descriptors, a database that refuses the login): exit code 1.
    #[error("{0}")]
    Runtime(String),
}

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// A part of the shared [`Request`] that not every protocol reads (`-H`, `-d`, `--streams`):
/// a protocol says which it reads by these values ([`ProtocolFlags::reads`]), and the command
/// line takes one back by its value, not by how a message writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shared {
    /// `-H`: headers (gRPC: metadata).
    Header,
    /// `-d`: the body (gRPC: the message; raw TCP, WebSocket: what is sent).
    Body,
    /// `--streams`: users or requests in flight a connection.
    Streams,
}

impl Shared {
    /// The flag, as messages name it (`-d/--body`).
    pub fn flag(self) -> &'static str {
        match self {
            Shared::Header => "-H/--header",
            Shared::Body => "-d/--body",
            Shared::Streams => "--streams",
        }
    }
}

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.flag())
    }
}

/// `-H`.
pub const HEADER: Shared = Shared::Header;
/// `-d`.
pub const BODY: Shared = Shared::Body;
/// `--streams`.
pub const STREAMS: Shared = Shared::Streams;

/// The request every protocol may read, as written on the command line (`-H`, `-d`,
/// `--streams`, `-t`, `--connect-timeout`, `-k`, `--cacert`, `--cert`, `--key`, `--label`);
/// which of the first three a protocol reads, it says ([`ProtocolFlags::reads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Headers, each `name: value`; gRPC: metadata.
    pub headers: Vec<String>,
    /// The body, or `@FILE` to read it from a file; gRPC: the message as JSON.
    pub body: Option<String>,
    /// How many users or in-flight requests share one connection (HTTP/2, gRPC).
    pub streams: Option<usize>,
    /// Per-request timeout, from send to the last byte of the response.
    pub timeout: String,
    /// Connect timeout (TCP and TLS).
    pub connect_timeout: String,
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// Trust the PEM certificates in this file instead of the built-in roots.
    pub cacert: Option<PathBuf>,
    /// Present this PEM certificate chain to servers (mutual TLS); with `key`.
    pub cert: Option<PathBuf>,
    /// The private key of `cert` (PEM).
    pub key: Option<PathBuf>,
    /// The row label in results.
    pub label: Option<String>,
}

impl Default for Request {
    fn default() -> Self {
        Request {
            headers: Vec::new(),
            body: None,
            streams: None,
            timeout: "30s".into(),
            connect_timeout: "10s".into(),
            insecure: false,
            cacert: None,
            cert: None,
            key: None,
            label: None,
        }
    }
}

impl Request {
    /// The parts given that a protocol may not read ([`HEADER`], [`BODY`], [`STREAMS`]); the
    /// rest apply to every protocol.
    pub fn given(&self) -> Vec<Shared> {
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

    /// Takes back `part` (one of [`Request::given`]'s).
    pub fn clear(&mut self, part: Shared) {
        match part {
            Shared::Header => self.headers.clear(),
            Shared::Body => self.body = None,
            Shared::Streams => self.streams = None,
        }
    }

    /// `--streams`, or its default (100).
    pub fn streams(&self) -> Result<usize, FlagsError> {
        match self.streams.unwrap_or(100) {
            0 => Err(input("--streams must be at least 1")),
            n => Ok(n),
        }
    }

    /// `-t/--timeout`.
    pub fn timeout(&self) -> Result<Duration, FlagsError> {
        positive("-t/--timeout", &self.timeout)
    }

    /// `--connect-timeout`.
    pub fn connect_timeout(&self) -> Result<Duration, FlagsError> {
        positive("--connect-timeout", &self.connect_timeout)
    }

    /// `-d`'s bytes: as written, or a file's (`@FILE`).
    pub fn body(&self) -> Result<Option<Vec<u8>>, FlagsError> {
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
    pub fn body_text(&self) -> Result<Option<String>, FlagsError> {
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
    pub fn headers(&self) -> Result<Vec<(String, String)>, FlagsError> {
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

    /// `--cert` and `--key`: both, or neither.
    pub fn identity(&self) -> Result<Option<Identity>, FlagsError> {
        Identity::pair(self.cert.clone(), self.key.clone(), ("--cert", "--key")).map_err(input)
    }

    /// The neutral options of every target: timeouts, TLS trust, streams and headers.
    pub fn options(&self) -> Result<ClientOptions, FlagsError> {
        Ok(ClientOptions {
            timeout: self.timeout()?,
            connect_timeout: self.connect_timeout()?,
            insecure: self.insecure,
            cacert: self.cacert.clone(),
            identity: self.identity()?,
            streams: self.streams()?,
            headers: self.headers()?,
            ..ClientOptions::default()
        })
    }
}

/// The TLS flags given (a CA file, a client certificate) that a plain target refuses, as the
/// refusal begins ("--cacert applies to", "--cert and --key apply to"), or `None`.
pub fn tls_refusal(cacert: bool, identity: bool) -> Option<&'static str> {
    match (cacert, identity) {
        (false, false) => None,
        (true, false) => Some("--cacert applies to"),
        (false, true) => Some("--cert and --key apply to"),
        (true, true) => Some("--cacert, --cert and --key apply to"),
    }
}

/// A duration longer than zero, named by its flag when it is not.
pub fn positive(flag: &str, v: &str) -> Result<Duration, FlagsError> {
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

/// What a URL run is made from ([`ProtocolFlags::url_run`]).
pub struct UrlArgs<'a> {
    /// The URL (one of the schemes the protocol declares).
    pub url: &'a str,
    /// The request flags.
    pub request: &'a Request,
    /// The plan the load flags give against `url`, or why they give none: a protocol that
    /// checks its own flags first (SQL's) takes it after them, so that their errors are said
    /// first.
    pub plan: Result<RunPlan, FlagsError>,
    /// This process's share of the plan.
    pub shard: Shard,
    /// Checks that the thresholds the command line was given name rows among these labels
    /// (bad input otherwise), so a protocol can say so before it reaches its target.
    pub rows: &'a dyn Fn(&[String]) -> Result<(), FlagsError>,
}

impl std::fmt::Debug for UrlArgs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlArgs")
            .field("url", &self.url)
            .field("request", &self.request)
            .field("plan", &self.plan)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

/// A run of a URL, as a protocol's flags made it: the run's plan, its driver and the
/// connections it opens at most (for the open-file limit). The command line runs it headless
/// and silent, then applies its outputs.
#[derive(Debug)]
pub struct UrlRun<D> {
    /// The plan (the one given, or fitted: a target shown without its password, connections).
    pub plan: RunPlan,
    /// The driver.
    pub driver: D,
    /// The connections it opens at most.
    pub connections: u64,
}

impl<D> UrlRun<D> {
    /// `driver` under `plan`, opening a connection a user (or in-flight slot) at most.
    pub fn of(plan: RunPlan, driver: D) -> UrlRun<D> {
        let connections = plan.peak_concurrency();
        UrlRun {
            plan,
            driver,
            connections,
        }
    }
}

/// `-d` and `-H` of a URL run as one message (NATS's, RabbitMQ's): its payload, and the
/// headers whose values hold templates, each compiled by `compile` (throng-template's
/// `Calls`: functions rendered per call); a header without a template stays among the
/// options' fixed headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `-d`, compiled (empty without it).
    pub payload: Text,
    /// `-H`'s headers whose values are templates, compiled.
    pub headers: Vec<(String, Text)>,
}

impl Message {
    /// The message of `request`, the templated headers taken out of `options`; a template
    /// that does not compile is refused naming its flag.
    pub fn of(
        request: &Request,
        options: &mut ClientOptions,
        mut compile: impl FnMut(&str) -> Result<Text, String>,
    ) -> Result<Message, FlagsError> {
        let payload = request.body_text()?.unwrap_or_default();
        let payload = compile(&payload)
            .map_err(|e| FlagsError::Input(format!("-d/--body's template: {e}")))?;
        let (mut fixed, mut headers) = (Vec::new(), Vec::new());
        for (name, value) in std::mem::take(&mut options.headers) {
            if !value.contains("{{") && !value.contains("{%") {
                fixed.push((name, value));
                continue;
            }
            let text = compile(&value).map_err(|e| FlagsError::Input(format!("-H {name}: {e}")))?;
            headers.push((name, text));
        }
        options.headers = fixed;
        Ok(Message { payload, headers })
    }

    /// What renders it per call: `calls` where any of it is a template, else a renderer of
    /// static text only (a message without templates costs no render).
    pub fn renderer<R: Render + Send + Sync + 'static>(
        &self,
        calls: R,
    ) -> std::sync::Arc<dyn Render + Send + Sync> {
        let template = |t: &Text| matches!(t, Text::Template(_));
        match template(&self.payload) || self.headers.iter().any(|(_, t)| template(t)) {
            true => std::sync::Arc::new(calls),
            false => std::sync::Arc::new(crate::step::StaticOnly),
        }
    }
}

/// The one server a monitor flag (`--nats-monitor`, `--amqp-monitor`) names for a run: none
/// without the flag, else `make`'s of its URL, whose error is told after the flag; a second
/// URL is refused (a grid's sides may each name theirs, `SIDE=URL`).
pub fn one_server<T>(
    flag: &str,
    urls: &[String],
    make: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, FlagsError> {
    match urls {
        [] => Ok(None),
        [one] => make(one)
            .map(Some)
            .map_err(|e| FlagsError::Input(format!("{flag} {e}"))),
        [..] => Err(FlagsError::Input(format!(
            "{flag}: one server a run (a grid's sides may each name theirs, SIDE=URL)"
        ))),
    }
}

/// What servers watched beside a run are read with ([`ProtocolFlags::watch`]).
#[derive(Debug, Clone, Copy)]
pub struct WatchArgs<'a> {
    /// The run's URL (or scenario file).
    pub url: &'a str,
    /// `--idle`, as written: how long to read them before the load.
    pub idle: Option<&'a str>,
    /// `--quiet`: no messages but warnings.
    pub quiet: bool,
}

impl WatchArgs<'_> {
    /// How long to read the servers before the load: `--idle`, 1 s by default.
    pub fn idle(&self) -> Result<Duration, FlagsError> {
        match self.idle {
            Some(v) => positive("--idle", v),
            None => Ok(Duration::from_secs(1)),
        }
    }
}

/// A protocol's own flags on `throng run` (a struct in the protocol's crate, registered beside
/// its declaration by the command line): enough for the command line to say whether a flag
/// applies to a run's targets, to take a side's flags back in a grid of several protocols, to
/// give a scenario's targets their options, and to make a URL run, without naming the
/// protocol.
///
/// The flags know nothing of which protocol they are: the registration pairs them with the
/// protocol's declaration ([`crate::step::Protocol`]: its name and schemes), once.
pub trait ProtocolFlags: Clone + Send + Sync + std::fmt::Debug + 'static {
    /// The driver of its URL runs.
    type Driver: Driver;
    /// The flags given, as messages name them (`--call`).
    fn given(&self) -> Vec<&'static str>;
    /// Takes them all back.
    fn clear(&mut self);
    /// Which of [`Request::given`]'s it reads ([`HEADER`], [`BODY`], [`STREAMS`]).
    fn reads(&self) -> &'static [Shared];
    /// Whether the flags make sense for a URL run of this protocol with `request`: `--streams`
    /// without `--http2` does not. Said before any load.
    fn check_url(&self, _request: &Request) -> Result<(), FlagsError> {
        Ok(())
    }
    /// Checks all that a URL run of `url` (with `plan`) needs from these flags and `request`
    /// without reaching the target: what [`ProtocolFlags::url_run`] would refuse before
    /// connecting (HTTP's request, gRPC's call and message text, SQL's statements and
    /// parameters), said the same way. [`ProtocolFlags::check_url`] by default.
    fn check_offline(
        &self,
        _url: &str,
        request: &Request,
        _plan: &RunPlan,
    ) -> Result<(), FlagsError> {
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
    ) -> Result<ClientOptions, FlagsError>;
    /// The run of `args.url` (one of the schemes its protocol declares) under `args.plan`: its
    /// driver from these flags and the request, made for `args.shard`, and checked against
    /// the target where the protocol can before any load (a SQL statement that does not
    /// prepare is [`FlagsError::Input`]).
    fn url_run<'a>(
        &'a self,
        args: UrlArgs<'a>,
    ) -> impl Future<Output = Result<UrlRun<Self::Driver>, FlagsError>> + 'a;
    /// Whether its flags watch servers beside any run, of whatever protocol (SQL's
    /// `--db-stats`): their idle window is read from them, so `--idle` needs no container.
    fn watches(&self) -> bool {
        false
    }
    /// Checks the URLs of the servers it watches, connecting to none.
    fn check_watched(&self, _request: &Request) -> Result<(), FlagsError> {
        Ok(())
    }
    /// The servers it watches, read through their idle window now and ready to be watched
    /// through the load of a run; `None` when it watches none.
    fn watch<'a>(
        &'a self,
        _request: &'a Request,
        _args: WatchArgs<'a>,
    ) -> impl Future<Output = Result<Option<Watched>, FlagsError>> + 'a {
        async { Ok(None) }
    }
    /// Keeps of the servers it watches, and of the flags that name sides (HTTP's
    /// `--http2=SIDE`), those of one side of a grid: `pick` keeps a list's entries that name no
    /// side (`URL`) and the side's own (`SIDE=URL`, as `URL`).
    fn for_side(&mut self, _pick: &dyn Fn(&[String]) -> Vec<String>) {}
    /// Checks the flags that name sides against an A/B run's sides before any load: `own` are
    /// the names of the sides of this protocol, `others` the rest.
    fn check_sides(&self, _own: &[&str], _others: &[&str]) -> Result<(), FlagsError> {
        Ok(())
    }
    /// Whether `-d` is this protocol's request when an A/B run's sides speak several protocols
    /// that read it: it goes to the sides of those that say so, and to every reader only when
    /// none does. By default it does: a gRPC call's message, a TCP, WebSocket, NATS or AMQP
    /// message is the request itself, so a transports grid sends each side the same message;
    /// HTTP's GET says no (its body was once a gRPC side's message sent 2 KB a GET).
    fn takes_body(&self) -> bool {
        true
    }
    /// Fits a scenario's plan to these flags, for the file's `targets` of this protocol, and
    /// returns the connections that adds (gRPC's `--connections`: N connections a target).
    fn fit_scenario(
        &self,
        _plan: &mut RunPlan,
        _request: &Request,
        _targets: usize,
    ) -> Result<u64, FlagsError> {
        Ok(0)
    }
}

/// What a server waits on to stop.
pub type Stop = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A server serving until it is stopped.
pub type Serving = Pin<Box<dyn Future<Output = Result<(), FlagsError>>>>;

/// A protocol's testbed server's flags (`throng serve NAME`): a struct in the protocol's
/// crate (deriving clap's `Args` behind its `clap` feature) and how it serves until stopped.
pub trait ServeFlags: 'static {
    /// Its name after `throng serve` (`tcp`).
    const NAME: &'static str;
    /// What `throng serve --help` says of it.
    const ABOUT: &'static str;
    /// Serves until `stop` is ready (the command line's Ctrl-C or SIGTERM), saying where on
    /// standard output; a bad flag is [`FlagsError::Input`].
    fn serve(self, stop: Stop) -> Serving;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles as throng-template's `Calls` would: text with `{{` a template, else static.
    fn compile(s: &str) -> Result<Text, String> {
        match s.contains("{{") {
            true if s.contains("bad") => Err("unknown function bad".into()),
            true => Ok(Text::Template(s.into())),
            false => Ok(Text::Static(s.into())),
        }
    }

    #[test]
    fn a_url_runs_message_keeps_fixed_headers_and_compiles_templated_ones() {
        let request = Request {
            headers: vec!["a: 1".into(), "b: {{ seq() }}".into()],
            body: Some("hi {{ uuid() }}".into()),
            ..Request::default()
        };
        let mut options = request.options().unwrap();
        let m = Message::of(&request, &mut options, compile).unwrap();
        assert_eq!(m.payload, Text::Template("hi {{ uuid() }}".into()));
        assert_eq!(
            m.headers,
            [("b".into(), Text::Template("{{ seq() }}".into()))]
        );
        assert_eq!(options.headers, [("a".into(), "1".into())]);
        let bad = Request {
            headers: vec!["x: {{ bad() }}".into()],
            ..Request::default()
        };
        let e = Message::of(&bad, &mut bad.options().unwrap(), compile).unwrap_err();
        assert!(e.to_string().contains("-H x: unknown function bad"), "{e}");
        let e = Message::of(
            &Request {
                body: Some("{{ bad() }}".into()),
                ..Request::default()
            },
            &mut ClientOptions::default(),
            compile,
        )
        .unwrap_err();
        assert!(e.to_string().contains("-d/--body's template"), "{e}");
    }

    #[test]
    fn a_monitor_flag_names_one_server_a_run() {
        let make = |u: &str| match u.starts_with("http://") {
            true => Ok(u.len()),
            false => Err(format!("{u}: not an http:// URL")),
        };
        assert_eq!(one_server("--m", &[], make).unwrap(), None);
        assert_eq!(
            one_server("--m", &["http://h".into()], make).unwrap(),
            Some(8)
        );
        let e = one_server("--m", &["h:1".into()], make).unwrap_err();
        assert_eq!(
            e.to_string(),
            FlagsError::Input("--m h:1: not an http:// URL".into()).to_string()
        );
        let two = ["http://a".to_string(), "http://b".to_string()];
        assert!(one_server("--m", &two, make)
            .unwrap_err()
            .to_string()
            .contains("one server a run"));
    }
}
