//! Raw flags as the user wrote them. Nothing here is validated beyond its type: the library
//! turns these into a `RunPlan` and a driver configuration, naming the flag when a value is bad.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// `throng --version`: the crate's version and the commit it was built from (build.rs).
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("THRONG_COMMIT"),
    ")"
);

/// throng: load testing whose numbers are right.
#[derive(Debug, Parser)]
#[command(name = "throng", version = VERSION, about, long_about = None, propagate_version = true)]
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
    Compare(throng_cli::results::CompareArgs),
    /// A result as HTML, Markdown, CSV, JUnit or JSON.
    Report(throng_cli::results::ReportArgs),
    /// The results of a plan's shards as one result.
    Merge(throng_cli::results::MergeArgs),
    /// A completion script for a shell, on standard output.
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// The manual page, in roff, on standard output (or one a subcommand into a directory).
    #[command(after_help = MAN_HELP)]
    Man(ManArgs),
}

const COMPLETIONS_HELP: &str = "Install:
  bash: throng completions bash > ~/.local/share/bash-completion/completions/throng
  zsh:  throng completions zsh > ~/.zfunc/_throng   (with fpath+=~/.zfunc before compinit)
  fish: throng completions fish > ~/.config/fish/completions/throng.fish";

const MAN_HELP: &str = "Read it:  throng man | man -l -
Install:  throng man --dir ~/.local/share/man/man1   (then man throng, man throng-run)";

/// Flags of `throng completions`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// Flags of `throng man`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ManArgs {
    /// Write throng.1 and a page for each subcommand (throng-run.1, ...) into this directory
    /// instead.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
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

pub(crate) use throng_cli::{ServeArgs, ServeTarget};
