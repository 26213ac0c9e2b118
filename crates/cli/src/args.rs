//! `throng run`'s flags as one clap struct ([`RunArgs`]: the load's, the request's, every
//! protocol's ([`ProtocolArgs`]) and the scenario file's), which a program of a library user's
//! can embed or parse as it is, and the subcommands protocols add ([`ProtocolCommand`]).

use clap::{Parser, Subcommand};
use throng_core::step::StepProtocol;
use throng_run::RunError;

use crate::request::{registrations, Flagged, RequestFlags, Server};
use crate::RunFlags;

/// Flags of `throng run`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "throng run",
    after_help = "Examples:
  throng run http://127.0.0.1:8080/ -c 50 -z 30s
  throng run http://127.0.0.1:8080/ -c 100 -n 100000
  throng run http://127.0.0.1:8080/ -q 3000 -z 2m --max-in-flight 500
  throng run http://127.0.0.1:8080/ --rate-stages '30s:3000,2m:3000,10s:0'
  throng run http://127.0.0.1:8080/ --user-stages '30s:100,2m:100,10s:0'
  throng run https://host/api -m POST -H 'content-type: application/json' -d @body.json --http2 --insecure -z 30s
  throng run http://127.0.0.1:8080/ -c 50 -z 1m --json result.json --threshold 'p99<250ms' --threshold 'error_rate<1%'
  throng run http://127.0.0.1:8080/ -c 200 -q 3000 -z 1m      # at most 200 in flight (as oha's -c with -q)
  throng run http://127.0.0.1:8080/ -q 3000 -z 2m --container web --idle 10s
  throng run scenarios/bank-transfer.yaml --target bank=http://127.0.0.1:9090 -c 10 -z 30s
  throng run grpc://127.0.0.1:50051 --call helloworld.Greeter/SayHello -d '{\"name\":\"x\"}' -c 100 -n 100000
  throng run 'postgres://bench:pw@localhost:5432/bench' --sql 'SELECT c FROM sbtest1 WHERE id = $1' --param 'rand_int(1, 10000)' -c 10 -z 30s
  throng run 'mysql://bench:pw@localhost:3306/bench' --workload oltp_read_write --table-size 100000 -c 16 -z 1m --db-stats 'mysql://bench:pw@localhost:3306/bench'
  throng run http://127.0.0.1/ --target a=http://127.0.0.1:8081/ --target b=http://127.0.0.1:8082/ -c 50 -z 30s --rounds 3
  throng run http://127.0.0.1/ --target h1=http://127.0.0.1:8080/ --target h2=http://127.0.0.1:8080/ --http2=h2 -c 50 -z 30s --rounds 3
  throng run --target http=http://127.0.0.1:8080/ --target grpc=grpc://127.0.0.1:50051 --target nats=nats://127.0.0.1:4222/greeter --call helloworld.Greeter/SayHello -m POST -d '{\"name\":\"x\"}' -c 100 -n 100000 --pivot level --columns mean,p50,max,min,p90,p99,rps
  throng run http://127.0.0.1:8080/ --sweep users=100..1000:100 -z 30s --warmup 10s --threshold 'p99<500ms' --until 'error_rate>5%'
  throng run http://127.0.0.1:8080/ -c 500 --sweep rate=2000,3000,5000,10000 -z 30s --json ladder.json
  throng run scenarios/workloads/browse.yaml --with scenarios/workloads/orders.yaml
  throng run http://127.0.0.1:8080/ -c 50 -z 1m --report html:report.html --samples samples.jtl

Exit codes: 0 passed, 1 runtime error, 2 usage or input error, 99 a threshold failed."
)]
pub struct RunArgs {
    /// The target URL (http://, https://, grpc://, grpcs://, ...), or a scenario file (.yaml or
    /// .yml); `FILE@WEIGHT` with more files after it: a mix, each file a flow picked by weight.
    /// None with two or more `--target SIDE=URL`: the sides are the runs.
    #[arg(
        required_unless_present = "targets",
        default_value = "",
        hide_default_value = true
    )]
    pub url: String,
    /// More scenario files of a mix, `FILE@WEIGHT` (as pgbench's `-f FILE@WEIGHT`).
    #[arg(value_name = "FILE@WEIGHT")]
    pub mix: Vec<String>,

    /// The flags every workload has: load, shards, outputs, thresholds, containers.
    #[command(flatten)]
    pub run: RunFlags,

    /// The request flags protocols share: headers, body, timeouts, TLS trust, label, streams.
    #[command(flatten)]
    pub request: RequestFlags,
    /// Each protocol's own flags (`--http2`, `--call`, `--sql`, ...).
    #[command(flatten)]
    pub protocols: ProtocolArgs,
    /// Scenario files: send target NAME's steps to URL instead of the file's (repeatable). The
    /// environment variable `THRONG_TARGET_<NAME>` (upper case, other characters as _) does the
    /// same; the flag wins over it, and both over the file. A/B: with a URL (or a file of one
    /// target), two or more `--target SIDE=URL` run the same plan against each side in turn
    /// and print the comparison; each side takes its own protocol's flags (`--call` and `-d`
    /// the gRPC sides', `--http2=SIDE` the sides it names).
    #[arg(long = "target", value_name = "NAME=URL", help_heading = "Request")]
    pub targets: Vec<String>,
    /// Run this scenario file too, at the same time, as a workload of its own (its own `load:`
    /// model, steps and thresholds; NAME=FILE names its rows) (repeatable), as k6's scenarios:
    /// one result with a row per workload and a TOTAL.
    #[arg(long = "with", value_name = "[NAME=]FILE", help_heading = "Load")]
    pub with: Vec<String>,
}

/// The own flags of every protocol of this build, each beside its protocol's declaration
/// ([`Flagged`]), read through the protocols' [`throng_protocols::registry`]: adding a
/// protocol adds its flags here with no line of this file changed.
#[derive(Debug, Clone)]
pub struct ProtocolArgs(Vec<Flagged>);

impl Default for ProtocolArgs {
    fn default() -> Self {
        let all = registrations();
        ProtocolArgs(all.iter().map(|r| r.default_flags()).collect())
    }
}

impl clap::Args for ProtocolArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        registrations().iter().fold(cmd, |cmd, r| r.augment(cmd))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for ProtocolArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let all = registrations();
        let flags = all.iter().map(|r| r.parse(matches));
        Ok(ProtocolArgs(flags.collect::<Result<_, _>>()?))
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl ProtocolArgs {
    /// Each protocol's flags, in the registry's order (HTTP's first).
    pub fn all(&self) -> Vec<&Flagged> {
        self.0.iter().collect()
    }

    /// The same, to change.
    pub fn all_mut(&mut self) -> Vec<&mut Flagged> {
        self.0.iter_mut().collect()
    }

    /// The flags of `protocol` (by its declaration's type, not its name).
    pub fn of(&self, protocol: &dyn StepProtocol) -> Option<&Flagged> {
        self.0.iter().find(|p| p.is(protocol))
    }

    /// The flags of the protocol whose declared schemes take `url`.
    pub fn for_url(&self, url: &str) -> Option<&Flagged> {
        let scheme = url.split_once("://")?.0;
        self.0
            .iter()
            .find(|p| p.schemes().iter().any(|s| s.eq_ignore_ascii_case(scheme)))
    }

    /// One protocol's flags as their own type (`F`: `HttpFlags`, `SqlFlags`), if this build
    /// has it.
    pub fn get<F: std::any::Any>(&self) -> Option<&F> {
        self.0.iter().find_map(|p| p.get::<F>())
    }

    /// Whether any protocol's flags watch servers beside the run
    /// ([`AnyFlags::watches`](crate::AnyFlags::watches)).
    pub fn watches(&self) -> bool {
        self.0.iter().any(|p| p.watches())
    }
}

/// The testbed servers of the registered protocols (`throng serve tcp`, `throng serve ws`).
pub fn servers() -> Vec<Server> {
    registrations().iter().filter_map(|r| r.server).collect()
}

/// The subcommands of protocols: `throng sql prepare|cleanup`.
#[derive(Debug, Clone, Subcommand)]
pub enum ProtocolCommand {
    /// Create or drop sysbench's tables (sbtest1..N) for `throng run URL --workload ...`.
    #[cfg(feature = "sql")]
    Sql(throng_sql::command::SqlCommand),
}

impl ProtocolCommand {
    /// Runs it.
    pub async fn run(self) -> Result<(), RunError> {
        match self {
            #[cfg(feature = "sql")]
            ProtocolCommand::Sql(c) => Ok(c.run().await?),
        }
    }
}
