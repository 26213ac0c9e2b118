//! Raw flags as the user wrote them. Nothing here is validated beyond its type: the library
//! turns these into a `RunPlan` and a driver configuration, naming the flag when a value is bad.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// throng: load testing whose numbers are right.
#[derive(Debug, Parser)]
#[command(name = "throng", version, about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
// Parsed once per process: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Put load on a URL and report what happened.
    Run(RunArgs),
    /// Start an embedded target and run a short load against it.
    Demo(DemoArgs),
    /// Run a testbed target on its own.
    Serve(ServeArgs),
    /// The protocols' own subcommands.
    #[command(flatten)]
    Protocol(throng_cli::ProtocolCommand),
    /// Results side by side, against the first, with regression thresholds.
    Compare(throng_run::results::CompareArgs),
    /// A result as HTML, Markdown, CSV, JUnit or JSON.
    Report(throng_run::results::ReportArgs),
    /// The results of a plan's shards as one result.
    Merge(throng_run::results::MergeArgs),
}

pub(crate) use throng_cli::RunArgs;

/// Flags of `throng demo`.
#[derive(Debug, Clone, Args)]
pub(crate) struct DemoArgs {
    /// How long to run.
    #[arg(short = 'z', long, default_value = "30s")]
    pub(crate) duration: String,
    /// Virtual users (closed loop).
    #[arg(short = 'c', long, default_value_t = 20)]
    pub(crate) users: u32,
    /// Run open loop at this rate instead.
    #[arg(short = 'q', long)]
    pub(crate) rate: Option<f64>,
    /// Write the JSON result to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// Never start the live dashboard.
    #[arg(long)]
    pub(crate) no_tui: bool,
}

/// `throng serve TARGET`: a subcommand a target, each with its flags.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Which target.
    #[command(subcommand)]
    pub(crate) target: ServeTarget,
}

/// A target of `throng serve`: one of the testbed's (`http`, `bank`, `grpc`), or a registered
/// protocol's own server (`tcp`, `ws`: [`throng_cli::servers`]).
#[derive(Debug)]
pub(crate) enum ServeTarget {
    /// One of the testbed's.
    Testbed(throng_testbed::serve::ServeArgs),
    /// A protocol's: its server and its subcommand's flags.
    Protocol(throng_cli::Server, clap::ArgMatches),
}

fn testbed_target(name: &str) -> Option<throng_testbed::serve::ServeTarget> {
    <throng_testbed::serve::ServeTarget as clap::ValueEnum>::from_str(name, false).ok()
}

impl clap::FromArgMatches for ServeTarget {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        if let Some(target) = testbed_target(name) {
            let mut a = throng_testbed::serve::ServeArgs::from_arg_matches(sub)?;
            a.target = target;
            return Ok(ServeTarget::Testbed(a));
        }
        match throng_cli::servers()
            .into_iter()
            .find(|s| s.name == name)
        {
            Some(server) => Ok(ServeTarget::Protocol(server, sub.clone())),
            None => Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand)),
        }
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Subcommand for ServeTarget {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        use clap::ValueEnum;
        let testbed = throng_testbed::serve::ServeTarget::value_variants()
            .iter()
            .filter_map(|t| t.to_possible_value())
            .fold(cmd, |cmd, v| {
                // A few bytes once per process: a command's name is `'static` to clap.
                let name: &'static str = v.get_name().to_string().leak();
                let sub = <throng_testbed::serve::ServeArgs as Args>::augment_args(
                    clap::Command::new(name),
                );
                cmd.subcommand(sub.about(v.get_help().cloned().unwrap_or_default()))
            });
        throng_cli::servers()
            .iter()
            .fold(testbed, |cmd, s| cmd.subcommand(s.command()))
            .subcommand_required(true)
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        testbed_target(name).is_some()
            || throng_cli::servers()
                .iter()
                .any(|s| s.name == name)
    }
}
