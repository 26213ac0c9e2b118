//! Raw flags as the user wrote them. Nothing here is validated beyond its type: the library
//! turns these into a `RunPlan` and a driver configuration, naming the flag when a value is bad.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// throng: load testing whose numbers are right.
#[derive(Debug, Parser)]
#[command(name = "throng", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Put load on a URL and report what happened.
    Run(RunArgs),
    /// Start an embedded target and run a short load against it.
    Demo(DemoArgs),
    /// Run a testbed target on its own.
    Serve(ServeArgs),
    /// Create or drop sysbench's tables (sbtest1..N) for `throng run URL --workload ...`.
    Sql(super::sql::SqlCommand),
    /// Results side by side, against the first, with regression thresholds.
    Compare(super::compare::CompareArgs),
    /// A result as HTML, Markdown, CSV, JUnit or JSON.
    Report(super::compare::ReportArgs),
    /// The results of a plan's shards as one result.
    Merge(super::merge::MergeArgs),
}

/// Flags of `throng run`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
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
  throng run http://127.0.0.1:8080/ --sweep users=100..1000:100 -z 30s --warmup 10s --threshold 'p99<500ms' --until 'error_rate>5%'
  throng run http://127.0.0.1:8080/ -c 500 --sweep rate=2000,3000,5000,10000 -z 30s --json ladder.json
  throng run scenarios/workloads/browse.yaml --with scenarios/workloads/orders.yaml
  throng run http://127.0.0.1:8080/ -c 50 -z 1m --report html:report.html --samples samples.jtl

Exit codes: 0 passed, 1 runtime error, 2 usage or input error, 99 a threshold failed.")]
pub struct RunArgs {
    /// The target URL (http://, https://, grpc://, grpcs://, ...), or a scenario file (.yaml or
    /// .yml); `FILE@WEIGHT` with more files after it: a mix, each file a flow picked by weight.
    pub url: String,
    /// More scenario files of a mix, `FILE@WEIGHT` (as pgbench's `-f FILE@WEIGHT`).
    #[arg(value_name = "FILE@WEIGHT")]
    pub mix: Vec<String>,

    /// The flags every workload has: load, shards, outputs, thresholds, containers.
    #[command(flatten)]
    pub run: throng_run::flags::RunFlags,

    /// The request flags protocols share: headers, body, timeouts, TLS trust, label, streams.
    #[command(flatten)]
    pub request: throng_run::flags::RequestFlags,
    /// HTTP's own flags.
    #[command(flatten)]
    pub http: throng_http::flags::HttpFlags,
    /// Scenario files: send target NAME's steps to URL instead of the file's (repeatable). The
    /// environment variable `THRONG_TARGET_<NAME>` (upper case, other characters as _) does the
    /// same; the flag wins over it, and both over the file. A/B: with a URL (or a file of one
    /// target), two or more `--target SIDE=URL` run the same plan against each side in turn
    /// and print the comparison.
    #[arg(long = "target", value_name = "NAME=URL", help_heading = "Request")]
    pub targets: Vec<String>,
    /// Run this scenario file too, at the same time, as a workload of its own (its own `load:`
    /// model, steps and thresholds; NAME=FILE names its rows) (repeatable), as k6's scenarios:
    /// one result with a row per workload and a TOTAL.
    #[arg(long = "with", value_name = "[NAME=]FILE", help_heading = "Load")]
    pub with: Vec<String>,
    /// Scenario files of several flows: seed the picks of flows, so a run can be repeated
    /// (over the file's `seed`).
    #[arg(long, help_heading = "Request")]
    pub seed: Option<u64>,

    /// gRPC targets (grpc://, grpcs://).
    #[command(flatten)]
    pub grpc: throng_grpc::flags::GrpcFlags,

    /// SQL flags (a postgres://, mysql:// or sqlite:// URL).
    #[command(flatten)]
    pub sql: throng_sql::flags::SqlFlags,
}

pub(crate) use throng_run::flags::at_least_one;

/// Flags of `throng demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// How long to run.
    #[arg(short = 'z', long, default_value = "30s")]
    pub duration: String,
    /// Virtual users (closed loop).
    #[arg(short = 'c', long, default_value_t = 20)]
    pub users: u32,
    /// Run open loop at this rate instead.
    #[arg(short = 'q', long)]
    pub rate: Option<f64>,
    /// Write the JSON result to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Never start the live dashboard.
    #[arg(long)]
    pub no_tui: bool,
}

/// Flags of `throng serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Which target.
    #[arg(value_enum)]
    pub target: ServeTarget,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// bank: keep the data in this database instead of SQLite in memory: postgres://... or
    /// mysql://... (its tables made if missing; read its counters with throng run --db-stats),
    /// or sqlite://FILE.
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Delay before each answer (e.g. 2ms).
    #[arg(long)]
    pub delay: Option<String>,
    /// With --delay, a random delay uniformly between --delay and this.
    #[arg(long, requires = "delay")]
    pub delay_max: Option<String>,
    /// Status code of each answer.
    #[arg(long, default_value_t = 200)]
    pub status: u16,
    /// Answer nothing from second A to second B after start, as A..B (e.g. 5s..8s).
    #[arg(long)]
    pub stall: Option<String>,
    /// A connection fault on every connection.
    #[arg(long, value_enum)]
    pub fault: Option<FaultArg>,
    /// Serve TLS with a self-signed certificate (printed on start).
    #[arg(long)]
    pub tls: bool,
    /// http: serve at most N requests at once, the others waiting their turn (a known
    /// capacity: N / --delay requests a second).
    #[arg(long, value_name = "N", value_parser = at_least_one::<usize>)]
    pub capacity: Option<usize>,
}

/// Testbed targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServeTarget {
    /// The HTTP target.
    Http,
    /// The demo's bank: clients, transfers, orders and assets over JSON, in an in-memory SQLite;
    /// on the same port, clients and transfers over gRPC (bank.Bank, with reflection).
    Bank,
    /// A gRPC greeter (unary, server-streaming, client-streaming and bidi) with reflection and
    /// health; --status is a gRPC code (0-16).
    Grpc,
}

/// Connection faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FaultArg {
    /// Reset each connection after reading the request.
    Reset,
    /// Answer bytes that are not HTTP.
    Garbage,
    /// Never answer.
    Hang,
}
