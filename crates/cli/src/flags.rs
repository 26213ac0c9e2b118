//! The flags of `throng run` that every workload has, as an embeddable clap struct: the load,
//! the thresholds, the outputs, the shards and the containers.
//! [`RunFlags::run`] maps them onto a [`Run`] for a plan target and a driver, naming the flag
//! when a value is bad. The `throng` command flattens this struct into its own `run`; a library
//! user flattens it into theirs and gets the same flags, dashboard, JSON, thresholds and shards
//! for a workload of their own (see [`main`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use clap::Args;
use throng_core::spec::{self, Field, LoadSpec};
use throng_core::stages::parse_duration;
use throng_core::{Driver, RunPlan, Shard};
use throng_report::{Format, Level, Threshold};

use throng_run::{Grid, Run, RunError, Show};

pub use throng_run::flags::parse_thresholds;

fn input(m: impl Into<String>) -> RunError {
    RunError::Input(m.into())
}

/// The flags of a run that do not depend on the protocol.
#[derive(Debug, Clone, Default, Args)]
pub struct RunFlags {
    /// Closed loop: virtual users, each with its own connection (HTTP/1.1; HTTP/2 and gRPC
    /// users share theirs: --streams, --connections) [default: 50]. With -q, the most requests
    /// in flight (as oha and hey read `-c` with `-q`).
    #[arg(
        short = 'c',
        long = "users",
        help_heading = "Load",
        value_parser = at_least_one::<u32>,
        allow_negative_numbers = true
    )]
    pub users: Option<u32>,
    /// Stop after this many requests in all.
    #[arg(short = 'n', long, help_heading = "Load", value_parser = at_least_one::<u64>, allow_negative_numbers = true)]
    pub requests: Option<u64>,
    /// Stop after this long (e.g. 30s, 2m, 1h).
    #[arg(short = 'z', long, help_heading = "Load", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Closed loop: stop each user after this many iterations.
    #[arg(short = 'i', long, help_heading = "Load", value_parser = at_least_one::<u64>, allow_negative_numbers = true)]
    pub iterations: Option<u64>,
    /// Closed loop: users ramping in stages, DURATION:USERS,... (e.g. '30s:100,2m:100,10s:0').
    #[arg(long, help_heading = "Load", conflicts_with_all = ["users", "rate", "rate_stages"], allow_hyphen_values = true)]
    pub user_stages: Option<String>,
    /// Closed loop: pause after each iteration (e.g. 100ms).
    #[arg(long, help_heading = "Load", allow_hyphen_values = true)]
    pub think_time: Option<String>,
    /// Open loop: arrivals per second, whatever the target's speed.
    #[arg(
        short = 'q',
        long,
        help_heading = "Load",
        allow_negative_numbers = true
    )]
    pub rate: Option<f64>,
    /// Open loop: rate ramping in stages, DURATION:RATE,... starting from -q or 0.
    #[arg(long, help_heading = "Load", allow_hyphen_values = true)]
    pub rate_stages: Option<String>,
    /// Open loop: how arrivals are spaced [default: even]: even (1/rate apart), poisson
    /// (exponential gaps) or gamma:SHAPE (gamma gaps of mean 1/rate, vLLM's --burstiness: the
    /// gaps vary by 1/sqrt(SHAPE) of their mean, so 1 is poisson, 0.25 burstier, 4 more even).
    #[arg(long, value_name = "even|poisson|gamma:SHAPE", help_heading = "Load")]
    pub arrivals: Option<String>,
    /// Open loop: at most this many requests in flight (each needs a connection in HTTP/1.1)
    /// [default: 1000, or -c when given].
    #[arg(long, help_heading = "Load", value_parser = at_least_one::<u32>, allow_negative_numbers = true)]
    pub max_in_flight: Option<u32>,
    /// Open loop: arrivals that find no free slot wait in a queue this long, then are dropped
    /// [default: the same as --max-in-flight].
    #[arg(long, help_heading = "Load", allow_negative_numbers = true, value_parser = whole::<u32>)]
    pub queue: Option<u32>,
    /// Seed the run's random draws, so that a run can be repeated: an open loop's poisson and
    /// gamma arrivals (other bursts than gamma's default seed, the same shape's in every run;
    /// give each shard the same seed) and a scenario file's picks of flows (over its `seed`).
    #[arg(long, help_heading = "Load")]
    pub seed: Option<u64>,
    /// Run the load this long before measuring (each level of a sweep too): nothing of it is
    /// recorded, and connections stay open into the measurement, which lasts -z.
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Load",
        allow_hyphen_values = true
    )]
    pub warmup: Option<String>,
    /// The level of a sweep these flags run at ([`RunFlags::at_level`]), applied to the spec
    /// they make ([`throng_run::at_level`]); none from the command line itself.
    #[arg(skip)]
    level: Option<Level>,

    /// Run the plan at each of these levels, one after the other, as one result with a row per
    /// level: users=1000,2000,4000 or rate=2000,3000,5000, or a range users=1000..10000:1000
    /// (FROM..TO:STEP), or a paired ladder users:rate=300:2000,500:3000 (each rung an open loop
    /// at the rate with at most the users in flight). Each level runs for -z (after --warmup).
    #[arg(
        long,
        value_name = "users=N,...|rate=N,...|users:rate=U:R,...",
        help_heading = "Levels"
    )]
    pub sweep: Option<String>,
    /// End a sweep after the first level at which this holds, e.g. 'p99>500ms' or
    /// 'error_rate>5%' (any threshold expression); that level is kept and marked. With
    /// --threshold, the result names the capacity: the highest level that met them.
    #[arg(long, value_name = "CONDITION", help_heading = "Levels")]
    pub until: Option<String>,
    /// Run every level (and A/B side) this many times, alternating the sides.
    #[arg(long, default_value_t = 1, value_parser = at_least_one::<u32>, allow_negative_numbers = true, help_heading = "Levels")]
    pub rounds: u32,
    /// Pause between two runs of a sweep or an A/B run (e.g. 5s).
    #[arg(
        long,
        default_value = "0s",
        help_heading = "Levels",
        allow_hyphen_values = true
    )]
    pub cooldown: String,
    /// The shape of a grid's reports beside its level table: `--pivot side --columns
    /// mean,error_rate --unit s`.
    #[command(flatten)]
    pub shape: crate::results::ShapeFlags,

    /// Run shard I of N of the plan (I counts from 0): closed loop, the users u with
    /// u % N == I and that share of -n; open loop, every N-th arrival of the schedule. Merge
    /// the shards' results with `throng merge`.
    #[arg(long, value_name = "I/N", help_heading = "Shards")]
    pub shard: Option<String>,
    /// The number of shards, with the index from the scheduler's environment:
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs, from 0) or THRONG_SHARD_SLOT (from 1:
    /// Docker Swarm's {{.Task.Slot}}).
    #[arg(
        long,
        value_name = "N",
        help_heading = "Shards",
        conflicts_with = "shard"
    )]
    pub shards: Option<u32>,
    /// Start the load at this instant (RFC 3339, e.g. 2026-11-23T20:30:00Z, or +30s from now),
    /// so that every shard starts together.
    #[arg(long, value_name = "TIME", help_heading = "Shards")]
    pub start_at: Option<String>,
    /// Write the JSON result to this file (`-`: on standard output, as one line, with the
    /// summary on standard error).
    #[arg(long, help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// Write every request as a line of JMeter's CSV results (JTL) to this file, as the run
    /// goes (`jmeter -g FILE -o DIR` draws JMeter's dashboard from it).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub samples: Option<PathBuf>,
    /// Also write a report, FORMAT:FILE with FORMAT html, markdown, csv, junit or json
    /// (repeatable).
    #[arg(long = "report", value_name = "FORMAT:FILE", help_heading = "Output")]
    pub reports: Vec<String>,
    /// A pass/fail condition, e.g. 'p99<250ms', 'error_rate<1%', 'rps>=500', 'p95{GET /}<10ms',
    /// 'dropped<1' (open-loop arrivals never sent) (repeatable); exit code 99 when one fails.
    #[arg(long = "threshold", help_heading = "Output")]
    pub thresholds: Vec<String>,
    /// Goodput's objectives for replies streamed in tokens (--llm), e.g. 'ttft<200ms,tpot<50ms'
    /// (ttft, tpot, e2e; <, <=, or vLLM's ttft:200 in ms): the requests that meet them all, per
    /// second and as a share, per label.
    #[arg(long, value_name = "OBJECTIVES", help_heading = "Output")]
    pub goodput: Option<String>,
    /// Never start the live dashboard (print a progress line on stderr instead).
    #[arg(long, help_heading = "Output")]
    pub no_tui: bool,
    /// Print no progress line, nor where outputs were written (warnings and the run's notes
    /// stay).
    #[arg(long, help_heading = "Output")]
    pub quiet: bool,

    /// Worker threads [default: one per core].
    #[arg(long, help_heading = "Engine", value_parser = at_least_one::<usize>, allow_negative_numbers = true)]
    pub threads: Option<usize>,
    /// After the run stops, in-flight requests may finish for this long before they are aborted.
    #[arg(long, default_value = "2s", help_heading = "Engine")]
    pub grace: String,
    /// Open loop: an arrival starting later than this after its intended time counts as late.
    #[arg(long, default_value = "10ms", help_heading = "Engine")]
    pub late_after: String,

    /// Report this container's CPU, memory, network and block I/O from the Docker engine
    /// (name or id; repeatable). DOCKER_HOST=unix://... picks the engine.
    #[arg(
        long = "container",
        value_name = "NAME|ID",
        help_heading = "Containers"
    )]
    pub containers: Vec<String>,
    /// Report the running containers with this label, KEY=VALUE (repeatable).
    #[arg(
        long = "container-label",
        value_name = "KEY=VALUE",
        help_heading = "Containers"
    )]
    pub container_labels: Vec<String>,
    /// Sample the containers (--container) and databases (--db-stats) this long before the load
    /// starts, for the idle row (e.g. 10s; databases: 1s by default).
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Containers",
        allow_hyphen_values = true
    )]
    pub idle: Option<String>,

    /// Serve live metrics for Prometheus at http://ADDR/metrics while the run goes (HOST:PORT,
    /// or :PORT on every interface); after the run it stays up until a scrape has read the
    /// final counts, --metrics-linger at most.
    #[arg(long, value_name = "ADDR", help_heading = "Metrics")]
    pub metrics_listen: Option<String>,
    /// Push live metrics to this Prometheus remote write URL every --metrics-interval and at
    /// the end, e.g. http://127.0.0.1:9090/api/v1/write (Prometheus started with
    /// --web.enable-remote-write-receiver; user:password@ for basic authentication).
    #[arg(long, value_name = "URL", help_heading = "Metrics")]
    pub metrics_push: Option<String>,
    /// How often --metrics-push pushes; each push is given as long to be answered (10s at
    /// most) [default: 5s].
    #[arg(long, value_name = "DURATION", help_heading = "Metrics")]
    pub metrics_interval: Option<String>,
    /// How long --metrics-listen's endpoint may wait after the run for a scrape to read the
    /// final counts [default: 15s, Prometheus' usual scrape interval].
    #[arg(long, value_name = "DURATION", help_heading = "Metrics")]
    pub metrics_linger: Option<String>,
    /// A label every metric gets, KEY=VALUE (repeatable), e.g. testid=checkout-1 to tell this
    /// test's runs from others' in one Prometheus.
    #[arg(
        long = "metrics-label",
        value_name = "KEY=VALUE",
        help_heading = "Metrics"
    )]
    pub metrics_labels: Vec<String>,
}

pub use throng_core::at_least_one;

/// A whole number of at least 0.
fn whole<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.trim()
        .parse::<T>()
        .map_err(|_| format!("must be a whole number (0 or more), not {v:?}"))
}

/// What shows a run: the dashboard when standard output is a terminal that can draw and
/// `no_tui` (`--no-tui`) is not set, else the progress line unless `quiet`. A run that shows no
/// dashboard never touches the terminal.
pub fn show(no_tui: bool, quiet: bool) -> Show {
    use std::io::IsTerminal as _;
    let terminal =
        std::io::stdout().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
    match (terminal && !no_tui, quiet) {
        #[cfg(feature = "dashboard")]
        (true, _) => Show::Dashboard,
        (_, false) => Show::Progress,
        (_, true) => Show::Nothing,
    }
}

/// A load spec field as the command line names it.
pub fn flag(f: Field) -> &'static str {
    match f {
        Field::Users => "-c/--users",
        Field::UserStages => "--user-stages",
        Field::Requests => "-n/--requests",
        Field::Iterations => "-i/--iterations",
        Field::Duration => "-z/--duration",
        Field::ThinkTime => "--think-time",
        Field::Rate => "-q/--rate",
        Field::RateStages => "--rate-stages",
        Field::Arrivals => "--arrivals",
        Field::MaxInFlight => "--max-in-flight",
        Field::Queue => "--queue",
        Field::Grace => "--grace",
        Field::LateAfter => "--late-after",
        Field::Warmup => "--warmup",
        other => other.key(),
    }
}

impl RunFlags {
    /// The load flags as a spec (what a scenario's `load:` section goes under), each value
    /// read here and a bad one named with its flag; at the sweep's level when these are one
    /// level's flags ([`RunFlags::at_level`]).
    pub fn spec(&self) -> Result<LoadSpec, RunError> {
        let read = |field: Field, v: &Option<String>| {
            v.as_deref()
                .map(|v| spec::duration(flag(field), v))
                .transpose()
                .map_err(|e| input(e.to_string()))
        };
        let stages = |field: Field, v: &Option<String>| {
            v.as_deref()
                .map(|v| spec::stages(flag(field), v))
                .transpose()
                .map_err(|e| input(e.to_string()))
        };
        let made = LoadSpec {
            users: self.users,
            user_stages: stages(Field::UserStages, &self.user_stages)?,
            requests: self.requests,
            iterations: self.iterations,
            duration: read(Field::Duration, &self.duration)?,
            think_time: read(Field::ThinkTime, &self.think_time)?,
            rate: self.rate,
            rate_stages: stages(Field::RateStages, &self.rate_stages)?,
            arrivals: self
                .arrivals
                .as_deref()
                .map(|v| spec::arrivals(flag(Field::Arrivals), v))
                .transpose()
                .map_err(|e| input(e.to_string()))?,
            max_in_flight: self.max_in_flight,
            queue: self.queue,
            threads: self.threads,
            grace: read(Field::Grace, &Some(self.grace.clone()))?,
            late_after: read(Field::LateAfter, &Some(self.late_after.clone()))?,
            warmup: read(Field::Warmup, &self.warmup)?,
            start: None,
        };
        Ok(match self.level {
            Some(level) => throng_run::at_level(&made, level),
            None => made,
        })
    }

    /// The load flags as a plan against `target`, every bad value named with its flag.
    pub fn plan(&self, target: &str) -> Result<RunPlan, RunError> {
        let mut plan = self
            .spec()?
            .plan(target, &flag)
            .map_err(|e| input(e.to_string()))?;
        plan.goodput = self.goodput()?;
        if self.seed.is_some() && !plan.random_arrivals() {
            return Err(input(format!(
                "--seed seeds an open loop's random arrivals (-q with --arrivals poisson or \
                 gamma:SHAPE) and a scenario file's picks of flows; {target} has neither"
            )));
        }
        plan.seed = self.seed;
        Ok(plan)
    }

    /// `--goodput`'s objectives (none without it).
    pub fn goodput(&self) -> Result<throng_core::stream::Goodput, RunError> {
        self.goodput
            .as_deref()
            .map(|g| g.parse().map_err(|e| input(format!("--goodput {e}"))))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    /// `--threshold`s, whose labels must be among `labels`.
    pub fn thresholds(&self, labels: &[String]) -> Result<Vec<Threshold>, RunError> {
        parse_thresholds(&self.thresholds, "--threshold", labels)
    }

    /// `--report FORMAT:FILE`s, each file checked writable now.
    pub fn reports(&self) -> Result<Vec<(Format, PathBuf)>, RunError> {
        self.reports
            .iter()
            .map(|s| {
                let (f, path) = s.split_once(':').ok_or_else(|| {
                    input(format!(
                        "--report {s:?}: write FORMAT:FILE, e.g. --report markdown:report.md"
                    ))
                })?;
                let format = f
                    .parse::<Format>()
                    .map_err(|e| input(format!("--report {s:?}: {e}")))?;
                let path = PathBuf::from(path);
                throng_run::check_writable(&path)
                    .map_err(|e| input(format!("--report {s:?}: {e}")))?;
                Ok((format, path))
            })
            .collect()
    }

    /// `--json`, checked writable now.
    pub fn json(&self) -> Result<Option<&std::path::Path>, RunError> {
        match &self.json {
            Some(p) => {
                throng_run::check_writable(p).map_err(|e| input(format!("--json {e}")))?;
                Ok(Some(p))
            }
            None => Ok(None),
        }
    }

    /// The shard this process runs: `--shard I/N`, or `--shards N` with the index from the
    /// environment (`env` reads a variable): `JOB_COMPLETION_INDEX` counts from 0
    /// (Kubernetes), `THRONG_SHARD_SLOT` from 1 (Docker Swarm's `{{.Task.Slot}}`).
    pub fn shard(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, RunError> {
        shard(self.shard.as_deref(), self.shards, env)
    }

    /// `--start-at`: an RFC 3339 instant, or `+D` from now.
    pub fn start_at(&self) -> Result<Option<SystemTime>, RunError> {
        start_at(self.start_at.as_deref())
    }

    /// The containers to watch: `names` (a scenario file's) and the flags' (`--container`,
    /// `--container-label`, `--idle`); `None` when none is. `databases`: `--db-stats` reads
    /// databases through the `--idle` period too, so it needs no container then.
    pub fn containers(
        &self,
        names: &[String],
        databases: bool,
    ) -> Result<Option<throng_run::Containers>, RunError> {
        let mut all = names.to_vec();
        all.extend(self.containers.iter().cloned());
        containers(
            &all,
            &self.container_labels,
            self.idle.as_deref(),
            databases,
        )
    }

    /// What shows the run (see [`show`]).
    pub fn show(&self) -> Show {
        show(self.no_tui, self.quiet)
    }

    /// What the flags say of a run's outputs, shard and start, checked now (files writable,
    /// the shard's index, the instant).
    pub fn outputs(&self) -> Result<Outputs, RunError> {
        #[cfg(feature = "metrics")]
        let metrics = self.start_metrics()?;
        #[cfg(not(feature = "metrics"))]
        self.start_metrics()?;
        if let Some(p) = &self.samples {
            throng_run::check_writable(p).map_err(|e| input(format!("--samples {e}")))?;
        }
        Ok(Outputs {
            json: self.json()?.map(|p| p.to_path_buf()),
            reports: self.reports()?,
            samples: self.samples.clone(),
            show: self.show(),
            quiet: self.quiet,
            shard: self.shard(&|k| std::env::var(k).ok())?,
            start_at: self.start_at()?,
            cell: None,
            databases: None,
            #[cfg(feature = "metrics")]
            metrics,
        })
    }

    /// Everything the flags say, as a run of `driver` against `target` (named so in the
    /// result): the plan, the thresholds (on the driver's rows), the outputs checked writable,
    /// the shard and its start, the containers, the dashboard or progress line, signals.
    pub fn run<D: Driver>(&self, target: &str, driver: Arc<D>) -> Result<Run, RunError> {
        let plan = self.plan(target)?;
        let thresholds = self.thresholds(&throng_run::labels(driver.as_ref()))?;
        #[allow(unused_mut)]
        let mut run = self
            .outputs()?
            .apply(Run::new(plan, driver).thresholds(thresholds));
        if let Some(c) = self.containers(&[], false)? {
            run = run.containers(c);
        }
        Ok(run)
    }
}

impl RunFlags {
    /// The exporter `--metrics-listen` and `--metrics-push` ask for, started (the address
    /// bound, the URL checked); `None` without them. Bad values are named with their flag.
    #[cfg(feature = "metrics")]
    pub fn metrics(&self) -> Result<Option<throng_metrics::Exporter>, RunError> {
        let Some(config) = self.metrics_config()? else {
            return Ok(None);
        };
        throng_metrics::Exporter::start(config)
            .map(Some)
            .map_err(|e| match e {
                throng_metrics::MetricsError::Listen { .. } => {
                    input(format!("--metrics-listen {e}"))
                }
                throng_metrics::MetricsError::Push { .. } => input(format!("--metrics-push {e}")),
                throng_metrics::MetricsError::Label(m) => input(format!("--metrics-label {m}")),
                other => RunError::Runtime(other.to_string()),
            })
    }

    /// The metrics flags, checked; `None` without --metrics-listen and --metrics-push.
    #[cfg(feature = "metrics")]
    fn metrics_config(&self) -> Result<Option<throng_metrics::Config>, RunError> {
        let duration = |flag: &str, v: &Option<String>, default: std::time::Duration| match v {
            None => Ok(default),
            Some(v) => match parse_duration(v) {
                Ok(d) if !d.is_zero() => Ok(d),
                Ok(_) => Err(input(format!("{flag} {v:?}: must be longer than 0"))),
                Err(e) => Err(input(format!(
                    "{flag} {v:?}: not a duration ({e}); e.g. 5s"
                ))),
            },
        };
        let defaults = throng_metrics::Config::default();
        let config = throng_metrics::Config {
            listen: self.metrics_listen.clone(),
            push: self.metrics_push.clone(),
            interval: duration(
                "--metrics-interval",
                &self.metrics_interval,
                defaults.interval,
            )?,
            linger: duration("--metrics-linger", &self.metrics_linger, defaults.linger)?,
            labels: self
                .metrics_labels
                .iter()
                .map(|l| {
                    let (k, v) = l.split_once('=').ok_or_else(|| {
                        input(format!(
                            "--metrics-label {l:?}: write KEY=VALUE, e.g. --metrics-label testid=checkout-1"
                        ))
                    })?;
                    throng_metrics::check_label(k.trim())
                        .map_err(|e| input(format!("--metrics-label {l:?}: {e}")))?;
                    Ok((k.trim().to_string(), v.to_string()))
                })
                .collect::<Result<_, RunError>>()?,
        };
        if self.metrics_interval.is_some() && config.push.is_none() {
            return Err(input(
                "--metrics-interval is how often --metrics-push pushes: give --metrics-push too",
            ));
        }
        if !config.labels.is_empty() && config.listen.is_none() && config.push.is_none() {
            return Err(input(
                "--metrics-label labels the metrics of --metrics-listen or --metrics-push: give \
                 one of them too",
            ));
        }
        if self.metrics_linger.is_some() && config.listen.is_none() {
            return Err(input(
                "--metrics-linger is how long --metrics-listen's endpoint waits for a last \
                 scrape: give --metrics-listen too",
            ));
        }
        Ok((config.listen.is_some() || config.push.is_some()).then_some(config))
    }

    /// Starts the exporter the metrics flags ask for, to be passed to the runs (and the grid)
    /// that report to it: [`Outputs::apply`] gives it to each run made with these outputs.
    #[cfg(feature = "metrics")]
    fn start_metrics(&self) -> Result<Option<throng_metrics::Exporter>, RunError> {
        let exporter = self.metrics()?;
        if let (Some(addr), false) = (exporter.as_ref().and_then(|e| e.listening()), self.quiet) {
            // The command line's message, said before any run (and observer) exists.
            throng_run::Observer::event(
                &throng_run::Console,
                &throng_run::Event::Note(format!("metrics: serving http://{addr}/metrics")),
            );
        }
        Ok(exporter)
    }

    /// Refuses the metrics flags in a build without them.
    #[cfg(not(feature = "metrics"))]
    fn start_metrics(&self) -> Result<(), RunError> {
        if self.metrics_listen.is_some() || self.metrics_push.is_some() {
            return Err(input(
                "--metrics-listen and --metrics-push: this build has no metrics (the `metrics` \
                 feature of throng-cli)",
            ));
        }
        Ok(())
    }

    /// The levels of `--sweep`, checked; none without it.
    pub fn levels(&self) -> Result<Vec<Level>, RunError> {
        match &self.sweep {
            None => Ok(Vec::new()),
            Some(s) => Level::parse_sweep(s).map_err(|e| input(format!("--sweep {e}"))),
        }
    }

    /// These flags at a level of the sweep: their spec ([`RunFlags::spec`]) is
    /// [`throng_run::at_level`]'s, the level's users or rate in place of the flags' own.
    pub fn at_level(&self, level: Level) -> RunFlags {
        RunFlags {
            level: Some(level),
            ..self.clone()
        }
    }

    /// Whether the flags ask for more than one run: a sweep, or rounds.
    pub fn is_grid(&self) -> bool {
        self.sweep.is_some() || self.rounds > 1
    }

    /// The grid the flags describe (levels, rounds, cooldown, thresholds on the rows of
    /// `labels`, the until condition, outputs), checked; its sides are the caller's.
    pub fn grid(&self, labels: &[String]) -> Result<Grid, RunError> {
        if self.until.is_some() && self.sweep.is_none() {
            return Err(input(
                "--until ends a sweep after the level that crosses it: give --sweep too",
            ));
        }
        let cooldown = parse_duration(&self.cooldown).map_err(|e| {
            input(format!(
                "--cooldown {:?}: not a duration ({e})",
                self.cooldown
            ))
        })?;
        let until = self
            .until
            .as_deref()
            .map(|u| parse_thresholds(&[u.to_string()], "--until", labels).map(|mut v| v.remove(0)))
            .transpose()?;
        let mut grid = Grid::new()
            .levels(self.levels()?)
            .rounds(self.rounds)
            .cooldown(cooldown)
            .thresholds(self.thresholds(labels)?)
            .summary(true)
            .messages(!self.quiet)
            .observer(throng_run::Console);
        if let Some(u) = until {
            grid = grid.until(u);
        }
        grid = grid.shape(self.shape.shape()?);
        if let Some(p) = self.json()? {
            grid = grid.json(p);
        }
        for (format, path) in self.reports()? {
            grid = grid.report(format, path);
        }
        grid.check()?;
        Ok(grid)
    }
}

/// Where a run's results go, how it is shown, and what it is given beside its driver, as the
/// command line gives them (see [`RunFlags::outputs`]): the one set of outputs of every run of
/// `throng run`; one run of several (a grid's cell) changes some before [`Outputs::apply`].
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// The JSON result file (`-`: standard output).
    pub json: Option<PathBuf>,
    /// Reports to write besides.
    pub reports: Vec<(Format, PathBuf)>,
    /// Every request as a line of JMeter's JTL in this file.
    pub samples: Option<PathBuf>,
    /// What shows the run.
    pub show: Show,
    /// No messages on standard error (files written, containers watched).
    pub quiet: bool,
    /// The share of the plan this process runs.
    pub shard: Shard,
    /// When the load starts.
    pub start_at: Option<SystemTime>,
    /// The run's cell in its grid (see [`Run::cell`]): its place and title, the grid's
    /// dashboard and standard output.
    pub cell: Option<throng_run::Cell>,
    /// Servers whose own counters go into the result (SQL's `--db-stats`), read through their
    /// idle window before the run: the run that takes them first starts them.
    pub databases: Option<Arc<throng_run::Databases>>,
    /// The exporter the runs report their metrics to (`--metrics-listen`, `--metrics-push`):
    /// one for every run of the process, a grid's included, passed to each.
    #[cfg(feature = "metrics")]
    pub metrics: Option<throng_metrics::Exporter>,
}

impl Outputs {
    /// `run` with these outputs, the summary printed and Ctrl-C and SIGTERM handled, as the
    /// command line runs.
    pub fn apply(self, run: Run) -> Run {
        let mut run = run
            .shard(self.shard)
            .summary(true)
            .messages(!self.quiet)
            .stop_on_signals(true)
            .observer(throng_run::Console)
            .show(self.show);
        if let Some(p) = self.json {
            run = run.json(p);
        }
        for (format, path) in self.reports {
            run = run.report(format, path);
        }
        if let Some(p) = self.samples {
            run = run.samples(p);
        }
        if let Some(at) = self.start_at {
            run = run.start_at(at);
        }
        #[cfg(feature = "metrics")]
        if let Some(m) = self.metrics {
            run = run.metrics(m);
        }
        if let Some(cell) = self.cell {
            run = run.cell(cell);
        }
        if let Some(start) = self.databases.and_then(|d| d.take()) {
            run = run.databases(start);
        }
        run
    }
}

/// The whole command line for a workload of your own: parses `F` (your clap struct, which
/// flattens [`RunFlags`]) from the process's arguments, makes the driver from it with `make`,
/// runs it as `throng run` would (tracing told that nothing listens,
/// [`throng_run::quiet_tracing`], unless the program set a subscriber), prints what went
/// wrong, and returns the exit code (0 passed, 1 runtime error, 2 bad input, 99 a threshold
/// failed).
///
/// ```no_run
/// use clap::Parser;
/// # struct MyDriver;
/// # impl throng_core::Driver for MyDriver {
/// #     type Worker = (); type Session = ();
/// #     fn steps(&self) -> Vec<throng_core::StepInfo> { vec![] }
/// #     fn worker(&self) {}
/// #     fn session(&self, _: &(), _: u64) {}
/// #     async fn execute(&self, _: &mut (), _: usize) -> throng_core::Outcome { Default::default() }
/// # }
/// #[derive(Parser)]
/// struct Cli {
///     /// My own flag.
///     #[arg(long, default_value = "k1")]
///     key: String,
///     #[command(flatten)]
///     run: throng_cli::RunFlags,
/// }
///
/// fn main() -> std::process::ExitCode {
///     throng_cli::main(|cli: &Cli| Ok(("my-workload".into(), MyDriver)), |cli| &cli.run)
/// }
/// ```
pub fn main<F, D>(
    make: impl FnOnce(&F) -> Result<(String, D), String>,
    flags: impl FnOnce(&F) -> &RunFlags,
) -> std::process::ExitCode
where
    F: clap::Parser,
    D: Driver,
{
    use throng_run::Observer;
    // The command line's words go where `throng run`'s go.
    let say = |line: String| {
        throng_run::Console.event(&throng_run::Event::Text {
            text: line + "\n",
            to: throng_run::observer::Stream::Err,
        })
    };
    let cli = F::parse();
    // Nothing is logged, as in `throng`: tracing's `log` fallback cost 5-7% of a gRPC run's CPU
    // (see `quiet_tracing`); a subscriber the program set already is kept.
    throng_run::quiet_tracing();
    let code = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(async {
            let (target, driver) = match make(&cli) {
                Ok(x) => x,
                Err(e) => {
                    say(format!("error: {e}"));
                    return throng_run::EXIT_USAGE;
                }
            };
            let run = match flags(&cli).run(&target, Arc::new(driver)) {
                Ok(r) => r,
                Err(e) => {
                    say(format!("error: {e}"));
                    return e.exit_code();
                }
            };
            match run.execute().await {
                Ok(f) => {
                    for w in &f.warnings {
                        throng_run::Console.event(&throng_run::Event::Warning(w.clone()));
                    }
                    for e in &f.failures {
                        say(format!("error: {e}"));
                    }
                    f.exit_code()
                }
                Err(e) => {
                    say(format!("error: {e}"));
                    e.exit_code()
                }
            }
        }),
        Err(e) => {
            say(format!("error: cannot start the runtime: {e}"));
            throng_run::EXIT_RUNTIME
        }
    };
    std::process::ExitCode::from(code)
}

/// The shard this process runs: `--shard I/N`, or `--shards N` with the index from the
/// environment (`env` reads a variable): `JOB_COMPLETION_INDEX` counts from 0 (Kubernetes),
/// `THRONG_SHARD_SLOT` from 1 (Docker Swarm's `{{.Task.Slot}}`).
fn shard(
    shard: Option<&str>,
    shards: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Shard, RunError> {
    if let Some(s) = shard {
        let bad = |why: &str| input(format!("--shard {s:?}: {why}"));
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| bad("write I/N, e.g. --shard 0/3 (I counts from 0)"))?;
        let n: u32 = n
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| bad("N must be a whole number of at least 1"))?;
        let i: u32 = i
            .trim()
            .parse()
            .map_err(|_| bad("I must be a whole number"))?;
        if i >= n {
            return Err(bad(&format!(
                "I counts from 0, so the shards of {n} are 0/{n} to {}/{n} (a scheduler that \
                 counts from 1: --shards {n} with THRONG_SHARD_SLOT)",
                n - 1
            )));
        }
        return Ok(Shard { index: i, count: n });
    }
    let Some(n) = shards else {
        return Ok(Shard::WHOLE);
    };
    if n == 0 {
        return Err(input("--shards must be at least 1"));
    }
    let (var, index) = match (env("JOB_COMPLETION_INDEX"), env("THRONG_SHARD_SLOT")) {
        (Some(v), _) => (
            "JOB_COMPLETION_INDEX",
            v.trim().parse::<u32>().ok().filter(|i| *i < n).ok_or(v),
        ),
        (None, Some(v)) => (
            "THRONG_SHARD_SLOT",
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|s| (1..=n).contains(s))
                .map(|s| s - 1)
                .ok_or(v),
        ),
        (None, None) => {
            return Err(input(format!(
                "--shards {n}: no shard index in the environment: set JOB_COMPLETION_INDEX (from \
                 0, as Kubernetes Indexed Jobs do) or THRONG_SHARD_SLOT (from 1, as Docker \
                 Swarm's {{{{.Task.Slot}}}}), or give --shard I/{n}"
            )))
        }
    };
    match index {
        Ok(index) => Ok(Shard { index, count: n }),
        Err(v) => Err(input(format!(
            "--shards {n}: {var}={v:?} is not a shard of {n} ({})",
            if var == "THRONG_SHARD_SLOT" {
                format!("slots count from 1 to {n}")
            } else {
                format!("indexes count from 0 to {}", n - 1)
            }
        ))),
    }
}

/// `--start-at`: an RFC 3339 instant, or `+D` from now.
fn start_at(start_at: Option<&str>) -> Result<Option<SystemTime>, RunError> {
    let Some(s) = start_at else {
        return Ok(None);
    };
    if let Some(d) = s.strip_prefix('+') {
        let d = throng_core::stages::parse_duration(d).map_err(|e| {
            input(format!(
                "--start-at {s:?}: not a duration after + ({e}); e.g. +30s"
            ))
        })?;
        return Ok(Some(SystemTime::now() + d));
    }
    humantime::parse_rfc3339_weak(s.trim_end_matches('Z'))
        .map(Some)
        .map_err(|e| {
            input(format!(
                "--start-at {s:?}: not an instant ({e}); write RFC 3339 in UTC, e.g. \
                 2026-11-23T20:30:00Z, or +30s"
            ))
        })
}

/// Validates the container flags; `None` when no container is selected. `databases`:
/// `--db-stats` reads databases through the `--idle` period too, so it needs no container then.
fn containers(
    containers: &[String],
    labels: &[String],
    idle: Option<&str>,
    databases: bool,
) -> Result<Option<throng_run::Containers>, RunError> {
    for name in containers {
        if name.trim().is_empty() {
            return Err(input("--container needs a container name or id"));
        }
    }
    for label in labels {
        if label.split('=').next().unwrap_or("").trim().is_empty() {
            return Err(input(format!(
                "--container-label {label:?}: write KEY=VALUE (or KEY), e.g. com.docker.compose.project=shop"
            )));
        }
    }
    let idle = idle
        .map(|v| {
            parse_duration(v).map_err(|e| {
                input(format!(
                    "--idle {v:?}: not a duration ({e}); write e.g. 10s"
                ))
            })
        })
        .transpose()?;
    let selection = throng_docker::Selection {
        containers: containers.to_vec(),
        labels: labels.to_vec(),
    };
    if selection.is_empty() {
        return match idle {
            Some(_) if !databases => Err(input(
                "--idle samples containers or databases before the load: name them with --container, --container-label or --db-stats",
            )),
            _ => Ok(None),
        };
    }
    Ok(Some(throng_run::Containers {
        selection,
        idle: idle.unwrap_or(std::time::Duration::ZERO),
    }))
}
