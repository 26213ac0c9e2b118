//! Raw TCP's own flags on `throng run` (`clap` feature): how requests and replies are framed
//! and how large a reply may be, mapped onto [`TcpOptions`]; `-d` is the request (C's escapes
//! decoded, `@FILE` a file's bytes).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use clap::Args;
use throng_core::step::ClientOptions;
use throng_core::{RunPlan, Shard};
use throng_run::flags::{ProtocolFlags, RequestFlags, RunFlags, UrlRun, BODY};
use throng_run::{Run, RunError};

use crate::{Framing, Payload, TcpOptions};

fn input(m: impl Into<String>) -> RunError {
    RunError::Input(m.into())
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
    pub fn options(&self) -> Result<TcpOptions, RunError> {
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
        request: &RequestFlags,
    ) -> Result<crate::Steps<crate::TcpClient>, RunError> {
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
        crate::url_steps(url, payload, &options, &request.options()?).map_err(input)
    }
}

impl ProtocolFlags for TcpFlags {
    fn clone_box(&self) -> Box<dyn ProtocolFlags> {
        Box::new(self.clone())
    }

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

    fn reads(&self) -> &'static [&'static str] {
        &[BODY]
    }

    fn check_offline(
        &self,
        url: &str,
        request: &RequestFlags,
        _plan: &RunPlan,
    ) -> Result<(), RunError> {
        self.url_steps(url, request).map(|_| ())
    }

    fn scenario_options(
        &self,
        options: ClientOptions,
        targets: usize,
        source: &str,
    ) -> Result<ClientOptions, RunError> {
        if let (0, Some(flag)) = (targets, self.given().first()) {
            return Err(input(format!(
                "{flag} applies to tcp:// targets; {source} has none"
            )));
        }
        Ok(options.with(self.options()?))
    }

    fn url_run<'a>(
        &'a self,
        url: &'a str,
        request: &'a RequestFlags,
        load: &'a RunFlags,
        _shard: Shard,
    ) -> Pin<Box<dyn Future<Output = Result<UrlRun, RunError>> + 'a>> {
        Box::pin(async move {
            let plan = load.plan(url)?;
            let steps = self.url_steps(url, request)?;
            let connections = plan.peak_concurrency();
            Ok(UrlRun {
                run: Run::new(plan, Arc::new(steps)),
                connections,
            })
        })
    }
}
