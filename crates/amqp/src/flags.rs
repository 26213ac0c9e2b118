//! AMQP's own flags on `throng run` (`clap` feature), mapped onto [`AmqpOptions`]: the route
//! (`--exchange`, `--routing-key`), what a URL run's calls do (`--amqp-mode rpc|publish`),
//! publish–consume's `--confirms`, `--no-ack` and `--prefetch`, and the broker watched beside
//! any run (`--amqp-monitor URL`, its management API's overview).

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

use crate::monitor::Overview;
use crate::{AmqpClient, AmqpOptions, AmqpStep, Mode};

/// How long after the load the broker is read once more (see [`crate::monitor`]).
pub const SETTLE: Duration = Duration::from_millis(5500);

fn input(m: impl Into<String>) -> FlagsError {
    FlagsError::Input(m.into())
}

/// A URL run's plan: its one step, its templates rendered per call.
pub type AmqpSteps = Steps<AmqpClient, Arc<dyn Render + Send + Sync>>;

/// AMQP's flags of `throng run`.
#[derive(Debug, Clone, Default, Args)]
pub struct AmqpFlags {
    /// amqp(s)://: the routing key messages are published with (with the default exchange, the
    /// queue's name); the URL's ?routing_key= when absent.
    #[arg(long, value_name = "KEY", help_heading = "AMQP")]
    pub routing_key: Option<String>,
    /// amqp(s)://: the exchange messages are published to (it must exist); the default exchange
    /// when absent.
    #[arg(long, value_name = "NAME", help_heading = "AMQP")]
    pub exchange: Option<String>,
    /// amqp(s)://: what each call does: rpc (publish -d as a request, its reply on direct
    /// reply-to timed; the default) or publish (publish -d, timed to its delivery to throng's
    /// own consumer).
    #[arg(long, value_name = "MODE", value_parser = mode, help_heading = "AMQP")]
    pub amqp_mode: Option<Mode>,
    /// amqp(s):// with --amqp-mode publish: publisher confirms (each publish waits for the
    /// broker's ack; returned and nacked messages are counted).
    #[arg(long, help_heading = "AMQP")]
    pub confirms: bool,
    /// amqp(s):// with --amqp-mode publish: throng's consumer does not acknowledge (auto-ack).
    #[arg(long, help_heading = "AMQP")]
    pub no_ack: bool,
    /// amqp(s):// with --amqp-mode publish: the consumer's prefetch, unacknowledged deliveries
    /// at once (100 by default; 0: no limit).
    #[arg(long, value_name = "N", help_heading = "AMQP")]
    pub prefetch: Option<u16>,
    /// Read a RabbitMQ's management API (http://USER:PASS@HOST:PORT, the rabbitmq_management
    /// plugin's) once a second beside any run, idle (--idle, 1s by default) and under load:
    /// messages published, delivered, acknowledged, redelivered, confirmed and returned, the
    /// queues' depth, connections and channels, in the result and reports.
    #[arg(long = "amqp-monitor", value_name = "URL", help_heading = "AMQP")]
    pub amqp_monitor: Vec<String>,
}

fn mode(v: &str) -> Result<Mode, String> {
    v.parse()
}

impl AmqpFlags {
    /// The options these flags set.
    pub fn options(&self) -> Result<AmqpOptions, FlagsError> {
        let mut o = AmqpOptions::default();
        if let Some(m) = self.amqp_mode {
            o.mode = m;
        }
        if let Some(e) = &self.exchange {
            crate::target::check_exchange(e).map_err(|m| input(format!("--exchange {m}")))?;
            o.exchange = Some(e.clone());
        }
        if let Some(k) = &self.routing_key {
            crate::target::check_short("--routing-key", k).map_err(input)?;
            o.routing_key = Some(k.clone());
        }
        let publish_only = [
            (self.confirms, "--confirms"),
            (self.no_ack, "--no-ack"),
            (self.prefetch.is_some(), "--prefetch"),
        ];
        if let Some((_, flag)) = publish_only.iter().find(|(given, _)| *given) {
            if o.mode != Mode::Publish {
                return Err(input(format!(
                    "{flag} applies to --amqp-mode publish (an RPC's reply comes from the \
                     service, not throng's consumer)"
                )));
            }
        }
        if self.no_ack && self.prefetch.is_some() {
            return Err(input(
                "--prefetch applies to a consumer that acknowledges; --no-ack has none",
            ));
        }
        o.confirms = self.confirms;
        o.ack = !self.no_ack;
        if let Some(p) = self.prefetch {
            o.prefetch = p;
        }
        Ok(o)
    }

    /// The step of a run of `url`: `-d` (templates of functions rendered per call) sent as an
    /// RPC request or published, with `-H`'s headers (templated values per call).
    pub fn url_steps(&self, url: &str, request: &Request) -> Result<AmqpSteps, FlagsError> {
        let mut options = request.options()?.with(self.options()?);
        let mut calls = Calls::default();
        let message = Message::of(request, &mut options, |s| calls.compile(s))?;
        let render = message.renderer(calls);
        let mut step = AmqpStep::rpc("");
        step.mode = self.amqp_mode.unwrap_or_default();
        step.payload = message.payload;
        step.headers = message.headers;
        let client = AmqpClient::new(url, &options).map_err(input)?;
        let steps = Steps::new(client, step, request.label.as_deref().unwrap_or(url))
            .map_err(|e| input(e.message))?;
        Ok(steps.rendered_by(render))
    }

    fn overview(&self, request: &Request) -> Result<Option<Overview>, FlagsError> {
        let timeout = request.connect_timeout()?.min(READ_LIMIT);
        one_server("--amqp-monitor", &self.amqp_monitor, |url| {
            Overview::new(url, timeout)
        })
    }
}

impl ProtocolFlags for AmqpFlags {
    type Driver = AmqpSteps;

    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        for (on, flag) in [
            (self.routing_key.is_some(), "--routing-key"),
            (self.exchange.is_some(), "--exchange"),
            (self.amqp_mode.is_some(), "--amqp-mode"),
            (self.confirms, "--confirms"),
            (self.no_ack, "--no-ack"),
            (self.prefetch.is_some(), "--prefetch"),
        ] {
            if on {
                given.push(flag);
            }
        }
        given
    }

    /// Takes back the load's flags; `--amqp-monitor` watches a broker beside any run, so it
    /// stays.
    fn clear(&mut self) {
        *self = AmqpFlags {
            amqp_monitor: std::mem::take(&mut self.amqp_monitor),
            ..AmqpFlags::default()
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
        if self.amqp_mode.is_some() {
            return Err(input(format!(
                "--amqp-mode applies to an amqp:// or amqps:// URL; {source} is a scenario file, \
                 whose amqp steps say `rpc` or `publish`"
            )));
        }
        if let (0, Some(flag)) = (targets, self.given().first()) {
            return Err(input(format!(
                "{flag} applies to amqp:// and amqps:// targets; {source} has none"
            )));
        }
        let mut own = AmqpFlags {
            amqp_mode: Some(Mode::Publish),
            ..self.clone()
        }
        .options()?;
        own.mode = Mode::Rpc;
        Ok(options.with(own))
    }

    async fn url_run(&self, args: UrlArgs<'_>) -> Result<UrlRun<Self::Driver>, FlagsError> {
        let driver = self.url_steps(args.url, args.request)?;
        Ok(UrlRun::of(args.plan?, driver))
    }

    fn watches(&self) -> bool {
        !self.amqp_monitor.is_empty()
    }

    fn check_watched(&self, request: &Request) -> Result<(), FlagsError> {
        self.overview(request).map(|_| ())
    }

    async fn watch<'a>(
        &'a self,
        request: &'a Request,
        args: WatchArgs<'a>,
    ) -> Result<Option<Watched>, FlagsError> {
        let Some(api) = self.overview(request)? else {
            return Ok(None);
        };
        // The broker's overview lags its messages by up to its collect_statistics_interval (5 s
        // by default; measured: 10 messages showed 4.9 s after the load on a node set to 1 s),
        // so the last reading is taken that long after the load, or the load's last messages
        // would be missing from it.
        Ok(Some(Watched::idle(vec![api], args.idle()?, SETTLE).await))
    }

    fn for_side(&mut self, pick: &dyn Fn(&[String]) -> Vec<String>) {
        self.amqp_monitor = pick(&self.amqp_monitor);
    }
}
