//! NATS's own flags on `throng run` (`clap` feature), mapped onto [`NatsOptions`]: what a URL
//! run's calls do (`--subject-mode request|publish`), throng's subscribers on a published
//! subject (`--subscribers N`), and the server watched beside any run (`--nats-monitor URL`,
//! its `/varz`).

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use throng_core::flags::{
    one_server, FlagsError, Message, ProtocolFlags, Request, UrlArgs, UrlRun, WatchArgs, BODY,
    HEADER,
};
use throng_core::step::{ClientOptions, Render};
use throng_core::steps::Steps;
use throng_core::watch::{Watched, READ_LIMIT};
use throng_core::RunPlan;
use throng_template::Calls;

use crate::monitor::Varz;
use crate::{Mode, NatsClient, NatsOptions, NatsStep, MAX_SUBSCRIBERS};

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// A URL run's plan: its one step, its templates rendered per call.
pub type NatsSteps = Steps<NatsClient, Arc<dyn Render + Send + Sync>>;

/// NATS's flags of `throng run`.
#[derive(Debug, Clone, Default, Args)]
pub struct NatsFlags {
    /// nats://: what each call does: request (send -d as a request, its reply timed; the
    /// default) or publish (publish -d, timed to its delivery to every one of throng's own
    /// subscribers on the subject).
    #[arg(long, value_name = "MODE", value_parser = mode, help_heading = "NATS")]
    pub subject_mode: Option<Mode>,
    /// nats:// with --subject-mode publish: throng's subscribers on the subject, each receiving
    /// every message on a connection of its own (1 by default, at most 64).
    #[arg(long, value_name = "N", help_heading = "NATS")]
    pub subscribers: Option<u32>,
    /// nats:// with --subject-mode publish: publish through JetStream (each message's
    /// acknowledgement by the stream that holds the subject awaited), each subscriber an
    /// ordered JetStream consumer of that stream instead of a core subscription.
    #[arg(long, help_heading = "NATS")]
    pub jetstream: bool,
    /// Read a nats-server's monitoring endpoint (its -m PORT: http://HOST:PORT) once a second
    /// beside any run, idle (--idle, 1s by default) and under load: its /varz messages and
    /// bytes in and out, slow consumers and connections, in the result and reports.
    #[arg(long = "nats-monitor", value_name = "URL", help_heading = "NATS")]
    pub nats_monitor: Vec<String>,
}

fn mode(v: &str) -> Result<Mode, String> {
    v.parse()
}

impl NatsFlags {
    /// The options these flags set.
    pub fn options(&self) -> Result<NatsOptions, FlagsError> {
        let mut o = NatsOptions::default();
        if let Some(m) = self.subject_mode {
            o.mode = m;
        }
        if let Some(n) = self.subscribers {
            if n == 0 || n > MAX_SUBSCRIBERS {
                return Err(input(format!(
                    "--subscribers {n}: 1 to {MAX_SUBSCRIBERS} subscribers"
                )));
            }
            if o.mode != Mode::Publish {
                return Err(input(
                    "--subscribers applies to --subject-mode publish (a request's reply comes \
                     from the service's responders, not throng's subscribers)",
                ));
            }
            o.subscribers = n;
        }
        if self.jetstream {
            if o.mode != Mode::Publish {
                return Err(input(
                    "--jetstream applies to --subject-mode publish (a request goes to the \
                     service's responders)",
                ));
            }
            o.jetstream = true;
        }
        Ok(o)
    }

    /// The step of a run of `url`: `-d` (templates of functions rendered per call) sent as a
    /// request or published, with `-H`'s headers (templated values per call).
    pub fn url_steps(&self, url: &str, request: &Request) -> Result<NatsSteps, FlagsError> {
        let mut options = request.options()?.with(self.options()?);
        let mut calls = Calls::default();
        let message = Message::of(request, &mut options, |s| calls.compile(s))?;
        let render = message.renderer(calls);
        let mut step = NatsStep::request("");
        step.mode = self.subject_mode.unwrap_or_default();
        step.payload = message.payload;
        step.headers = message.headers;
        let client = NatsClient::new(url, &options).map_err(input)?;
        let label = request.label.clone().unwrap_or_else(|| client.shown_url());
        let steps = Steps::new(client, step, label).map_err(|e| input(e.message))?;
        Ok(steps.rendered_by(render))
    }

    fn varz(&self, request: &Request) -> Result<Option<Varz>, FlagsError> {
        let timeout = request.connect_timeout()?.min(READ_LIMIT);
        one_server("--nats-monitor", &self.nats_monitor, |url| {
            Varz::new(url, timeout)
        })
    }
}

impl ProtocolFlags for NatsFlags {
    type Driver = NatsSteps;

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.subject_mode.is_some() {
            given.push("--subject-mode");
        }
        if self.subscribers.is_some() {
            given.push("--subscribers");
        }
        if self.jetstream {
            given.push("--jetstream");
        }
        given
    }

    /// Takes back the load's flags; `--nats-monitor` watches a server beside any run, so it
    /// stays.
    fn clear(&mut self) {
        *self = NatsFlags {
            nats_monitor: std::mem::take(&mut self.nats_monitor),
            ..NatsFlags::default()
        };
    }

    fn reads(&self) -> &'static [throng_core::flags::Shared] {
        &[HEADER, BODY]
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
        if self.subject_mode.is_some() {
            return Err(input(format!(
                "--subject-mode applies to a nats:// URL; {source} is a scenario file, whose \
                 nats steps say `request` or `publish`"
            )));
        }
        if let (0, Some(flag)) = (targets, self.given().first()) {
            return Err(input(format!(
                "{flag} applies to nats:// targets; {source} has none"
            )));
        }
        let mut own = NatsOptions::default();
        if let Some(n) = self.subscribers {
            if n == 0 || n > MAX_SUBSCRIBERS {
                return Err(input(format!(
                    "--subscribers {n}: 1 to {MAX_SUBSCRIBERS} subscribers"
                )));
            }
            own.subscribers = n;
        }
        own.jetstream = self.jetstream;
        Ok(options.with(own))
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        let driver = self.url_steps(args.url, args.request)?;
        let mut plan = args.plan?;
        // The run's target as it is shown: a password or token hidden.
        plan.target = driver.client().shown_url();
        Ok(UrlRun::of(plan, driver))
    }

    fn watches(&self) -> bool {
        !self.nats_monitor.is_empty()
    }

    fn check_watched(&self, request: &Request) -> Result<(), FlagsError> {
        self.varz(request).map(|_| ())
    }

    async fn watch<'a>(
        &'a self,
        request: &'a Request,
        args: WatchArgs<'a>,
    ) -> Result<Option<Watched>, FlagsError> {
        let Some(varz) = self.varz(request)? else {
            return Ok(None);
        };
        // nats-server counts a message when it handles it: a tenth of a second after the load
        // is plenty for the last ones.
        let settle = Duration::from_millis(100);
        Ok(Some(Watched::idle(vec![varz], args.idle()?, settle).await))
    }

    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>) {
        self.nats_monitor = pick(&self.nats_monitor);
    }
}
