//! WebSocket's own flags on `throng run` (`clap` feature), mapped onto [`WsOptions`]: what a
//! URL run awaits after sending `-d` (a reply per message by default, `--expect N` messages,
//! or `--listen D` of whatever the server pushes), binary messages, subprotocols and the
//! largest message taken.

use std::time::Duration;

use clap::Args;
use throng_core::flags::{FlagsError, ProtocolFlags, Request, UrlArgs, UrlRun, BODY};
use throng_core::stages::parse_duration;
use throng_core::step::ClientOptions;
use throng_core::RunPlan;

use crate::{WsClient, WsOptions};

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// WebSocket's flags of `throng run`.
#[derive(Debug, Clone, Default, Args)]
pub struct WsFlags {
    /// ws://: after sending -d, wait for N messages (instead of one reply per message).
    #[arg(long, value_name = "N", help_heading = "WebSocket")]
    pub expect: Option<u32>,
    /// ws://: wait this long for whatever the server pushes (each message a part, timed from
    /// the one before), e.g. 2s.
    #[arg(long, value_name = "DURATION", help_heading = "WebSocket")]
    pub listen: Option<String>,
    /// ws://: send -d as a binary message.
    #[arg(long, help_heading = "WebSocket")]
    pub binary: bool,
    /// ws://: a subprotocol to offer (repeatable, in order of preference).
    #[arg(long, value_name = "NAME", help_heading = "WebSocket")]
    pub subprotocol: Vec<String>,
    /// ws://: the largest message taken, in bytes (1 MiB by default); a larger one fails as
    /// `protocol`.
    #[arg(long, value_name = "BYTES", help_heading = "WebSocket")]
    pub max_message: Option<usize>,
}

impl WsFlags {
    /// The options these flags set.
    pub fn options(&self) -> Result<WsOptions, FlagsError> {
        let mut o = WsOptions::default();
        if let Some(m) = self.max_message {
            if m == 0 {
                return Err(input("--max-message must be at least 1 byte"));
            }
            o.max_message = m;
        }
        if self.expect == Some(0) {
            return Err(input("--expect must be at least 1 message"));
        }
        o.expect = self.expect;
        o.listen = self.listen.as_deref().map(listen).transpose()?;
        o.binary = self.binary;
        o.subprotocols = self.subprotocol.clone();
        Ok(o)
    }

    /// The steps of a run of `url`: `-d` (if any) sent on every call.
    pub fn url_steps(
        &self,
        url: &str,
        request: &Request,
    ) -> Result<crate::Steps<WsClient>, FlagsError> {
        let options = request.options()?.with(self.options()?);
        let message = request.body_text()?;
        let steps = crate::url_steps(url, &options, message.as_deref()).map_err(input)?;
        Ok(match &request.label {
            Some(label) => steps.labelled(label),
            None => steps,
        })
    }
}

fn listen(v: &str) -> Result<Duration, FlagsError> {
    match parse_duration(v) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(input(format!(
            "--listen {v:?}: write how long to wait for pushed messages, e.g. 2s"
        ))),
    }
}

impl ProtocolFlags for WsFlags {
    type Driver = crate::Steps<WsClient>;

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.expect.is_some() {
            given.push("--expect");
        }
        if self.listen.is_some() {
            given.push("--listen");
        }
        if self.binary {
            given.push("--binary");
        }
        if !self.subprotocol.is_empty() {
            given.push("--subprotocol");
        }
        if self.max_message.is_some() {
            given.push("--max-message");
        }
        given
    }

    fn clear(&mut self) {
        *self = WsFlags::default();
    }

    fn reads(&self) -> &'static [throng_core::flags::Shared] {
        &[BODY]
    }

    fn check_offline(
        &self,
        url: &str,
        request: &Request,
        _plan: &RunPlan,
    ) -> Result<(), FlagsError> {
        self.url_steps(url, request).map(|_| ())
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, FlagsError> {
        // What a URL run awaits, a scenario's steps say themselves.
        let url_only = [
            (self.expect.is_some(), "--expect"),
            (self.listen.is_some(), "--listen"),
            (self.binary, "--binary"),
        ];
        if let Some((_, flag)) = url_only.iter().find(|(given, _)| *given) {
            return Err(input(format!(
                "{flag} applies to a ws:// URL; {source} is a scenario file, whose ws steps say \
                 what they send and await"
            )));
        }
        if let (0, Some(flag)) = (targets, self.given().first()) {
            return Err(input(format!(
                "{flag} applies to ws:// and wss:// targets; {source} has none"
            )));
        }
        Ok(options.with(self.options()?))
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        let driver = self.url_steps(args.url, args.request)?;
        Ok(UrlRun::of(args.plan?, driver))
    }
}

/// `throng serve ws`: the testbed's WebSocket target on a port of its own.
#[derive(Debug, Clone, Args)]
pub struct WsServe {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 9001)]
    pub port: u16,
    /// What a message is answered with: echo (the default), push:COUNT:INTERVAL (COUNT
    /// messages, INTERVAL apart, for each one received) or stream:INTERVAL (a message every
    /// INTERVAL from the handshake on).
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// Delay before each answer (e.g. 2ms).
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Send a ping before each answer (the pongs are counted).
    #[arg(long)]
    pub ping: bool,
    /// A fault on every connection: hang, silent, reset, garbage, `refuse:STATUS` or
    /// `close:CODE[:N]` (close with CODE after answering N messages).
    #[arg(long, value_name = "FAULT")]
    pub fault: Option<String>,
    /// Serve wss:// with a self-signed certificate (printed on start).
    #[arg(long)]
    pub tls: bool,
}

impl WsServe {
    /// The target these flags describe.
    pub fn target(&self) -> Result<crate::serve::WsTarget, FlagsError> {
        let mut t = crate::serve::WsTarget::default();
        if let Some(m) = &self.mode {
            t.mode = m.parse().map_err(|e| input(format!("--mode: {e}")))?;
        }
        if let Some(d) = &self.delay {
            t.delay = parse_duration(d)
                .map_err(|e| input(format!("--delay {d:?}: not a duration ({e})")))?;
        }
        t.ping = self.ping;
        if let Some(f) = &self.fault {
            t.fault = Some(f.parse().map_err(|e| input(format!("--fault: {e}")))?);
        }
        t.tls = self.tls;
        Ok(t)
    }
}

impl throng_core::flags::ServeFlags for WsServe {
    const NAME: &'static str = "ws";
    const ABOUT: &'static str =
        "A WebSocket target: echoes or pushes messages, with delays, pings, close codes and faults";

    fn serve(self, stop: throng_core::flags::Stop) -> throng_core::flags::Serving {
        Box::pin(async move {
            let target = self.target()?;
            let listener = tokio::net::TcpListener::bind((self.host.as_str(), self.port))
                .await
                .map_err(|e| {
                    FlagsError::Runtime(format!("listening on {}:{}: {e}", self.host, self.port))
                })?;
            let running = target
                .serve(listener)
                .await
                .map_err(|e| FlagsError::Runtime(format!("starting the WebSocket target: {e}")))?;
            if let Some(pem) = &running.cert_pem {
                println!("{pem}");
            }
            println!("serving on {}", running.url());
            stop.await;
            eprintln!("served {} messages", running.received());
            running.stop();
            Ok(())
        })
    }
}
