//! Raw TCP's own flags on `throng run` (`clap` feature): how requests and replies are framed
//! and how large a reply may be, mapped onto [`TcpOptions`]; `-d` is the request (C's escapes
//! decoded, `@FILE` a file's bytes).

use clap::Args;
use throng_core::flags::{FlagsError, ProtocolFlags, Request, UrlArgs, UrlRun, BODY};
use throng_core::step::ClientOptions;
use throng_core::RunPlan;

use crate::{Framing, Payload, TcpOptions};

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// Raw TCP's flags of `throng run`.
#[derive(Debug, Clone, Default, Args)]
pub struct TcpFlags {
    /// tcp://: how requests and replies are framed: line (the default), crlf, delim:TEXT,
    /// len1|len2|len4|len8 (big-endian; `le` after it for little-endian, `+self` when the
    /// length counts itself, e.g. len4le+self), or fixed:N.
    #[arg(long, value_name = "FRAMING", help_heading = "TCP")]
    pub frame: Option<String>,
    /// tcp://: the largest reply taken, in bytes (1 MiB by default); a larger one fails as
    /// `protocol`.
    #[arg(long, value_name = "BYTES", help_heading = "TCP")]
    pub max_reply: Option<usize>,
    /// tcp://: send -d exactly as written (no delimiter appended, no length prefix added).
    #[arg(long, help_heading = "TCP")]
    pub raw_request: bool,
}

impl TcpFlags {
    /// The options these flags set.
    pub fn options(&self) -> Result<TcpOptions, FlagsError> {
        let mut o = TcpOptions::default();
        if let Some(f) = &self.frame {
            o.framing = f
                .parse::<Framing>()
                .map_err(|e| input(format!("--frame {f:?}: {e}")))?;
        }
        if let Some(m) = self.max_reply {
            if m == 0 {
                return Err(input("--max-reply must be at least 1 byte"));
            }
            o.max_reply = m;
        }
        o.frame_request = !self.raw_request;
        Ok(o)
    }

    /// The steps of a run of `url`: `-d` sent on every call.
    pub fn url_steps(
        &self,
        url: &str,
        request: &Request,
    ) -> Result<crate::Steps<crate::TcpClient>, FlagsError> {
        let options = self.options()?;
        let payload = match request.body.as_deref() {
            None => {
                return Err(input(format!(
                    "{url}: a tcp:// URL needs the request to send: -d 'PING\\n' (C's escapes \
                     decoded) or -d @FILE"
                )))
            }
            Some(b) if b.starts_with('@') => {
                Payload::Bytes(request.body()?.unwrap_or_default().into())
            }
            Some(b) => Payload::escaped(b).map_err(|e| input(format!("-d {b:?}: {e}")))?,
        };
        let steps = crate::url_steps(url, payload, &options, &request.options()?).map_err(input)?;
        Ok(match &request.label {
            Some(label) => steps.labelled(label),
            None => steps,
        })
    }
}

impl ProtocolFlags for TcpFlags {
    type Driver = crate::Steps<crate::TcpClient>;

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.frame.is_some() {
            given.push("--frame");
        }
        if self.max_reply.is_some() {
            given.push("--max-reply");
        }
        if self.raw_request {
            given.push("--raw-request");
        }
        given
    }

    fn clear(&mut self) {
        *self = TcpFlags::default();
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
        if let (0, Some(flag)) = (targets, self.given().first()) {
            return Err(input(format!(
                "{flag} applies to tcp:// and tcps:// targets; {source} has none"
            )));
        }
        Ok(options.with(self.options()?))
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        let driver = self.url_steps(args.url, args.request)?;
        Ok(UrlRun::of(args.plan?, driver))
    }
}

/// `throng serve tcp`: the testbed's raw TCP target on a port of its own.
#[derive(Debug, Clone, Args)]
pub struct TcpServe {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
    /// How requests are read and answers written (as throng run's --frame): line by default.
    #[arg(long, value_name = "FRAMING")]
    pub frame: Option<String>,
    /// Delay before each answer (e.g. 2ms).
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Write each answer in pieces a few milliseconds apart (a frame split across reads).
    #[arg(long)]
    pub split: bool,
    /// A fault on every request instead of its echo: close, reset, garbage, oversized:N or
    /// hang.
    #[arg(long, value_name = "FAULT")]
    pub fault: Option<String>,
    /// Serve tcps:// with a self-signed certificate (printed on start).
    #[arg(long)]
    pub tls: bool,
}

impl TcpServe {
    /// The target these flags describe.
    pub fn target(&self) -> Result<crate::serve::TcpTarget, FlagsError> {
        let mut t = crate::serve::TcpTarget::default();
        if let Some(f) = &self.frame {
            t.framing = f
                .parse::<Framing>()
                .map_err(|e| input(format!("--frame {f:?}: {e}")))?;
        }
        if let Some(d) = &self.delay {
            t.delay = throng_core::stages::parse_duration(d)
                .map_err(|e| input(format!("--delay {d:?}: not a duration ({e})")))?;
        }
        t.split = self.split;
        t.tls = self.tls;
        if let Some(f) = &self.fault {
            t.fault = Some(f.parse().map_err(|e| input(format!("--fault: {e}")))?);
        }
        Ok(t)
    }
}

impl throng_core::flags::ServeFlags for TcpServe {
    const NAME: &'static str = "tcp";
    const ABOUT: &'static str =
        "A raw TCP target: echoes each framed request (a line by default), with delays and faults";

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
                .map_err(|e| FlagsError::Runtime(format!("starting the TCP target: {e}")))?;
            if let Some(pem) = &running.cert_pem {
                println!("{pem}");
            }
            println!("serving on {}", running.url());
            stop.await;
            eprintln!("served {} requests", running.requests());
            running.stop();
            Ok(())
        })
    }
}
