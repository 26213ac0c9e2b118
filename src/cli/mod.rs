//! The command line: the subcommands and their flags (clap types, [`args`], most of them the
//! library's own flag structs flattened), handed to the library ([`runner`]).

pub(crate) mod args;
#[cfg(test)]
mod book;
mod demo;
#[cfg(test)]
mod examples;
mod generate;
pub(crate) mod grid;
pub(crate) mod runner;

use std::process::ExitCode;

use clap::Parser;

pub(crate) use args::Cli;
use throng_cli::scenario;

pub(crate) use throng_run::{EXIT_OK, EXIT_RUNTIME, EXIT_USAGE};

/// How a runtime error is printed: `throng: error: …`, with "error" said once when the
/// message says it itself (sqlx's "error communicating with database").
fn runtime_error(text: &str) -> String {
    match text
        .get(..5)
        .is_some_and(|w| w.eq_ignore_ascii_case("error"))
    {
        true => format!("throng: {text}"),
        false => format!("throng: error: {text}"),
    }
}

/// A failure of a command, with the exit code it maps to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Bad flags or input: exit 2.
    #[error("{0}")]
    Usage(String),
    /// Something failed while running: exit 1.
    #[error(transparent)]
    Runtime(#[from] anyhow::Error),
}

impl From<throng_run::RunError> for CliError {
    fn from(e: throng_run::RunError) -> Self {
        match e {
            throng_run::RunError::Input(m) => CliError::Usage(m),
            throng_run::RunError::Runtime(m) => CliError::Runtime(anyhow::anyhow!(m)),
        }
    }
}

impl CliError {
    /// The exit code this failure maps to.
    pub(crate) fn code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::Runtime(_) => EXIT_RUNTIME,
        }
    }
}

/// Parses the process arguments, runs the command, and returns its exit code.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    // Nothing is logged: the library's opt-in no-op subscriber tells tracing so (see its doc:
    // without it every disabled span of h2's is offered to `log`).
    throng_run::quiet_tracing();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("throng: cannot start the runtime: {e}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    };
    match rt.block_on(runner::execute(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            match &e {
                CliError::Usage(m) => eprintln!("throng: {m}"),
                CliError::Runtime(err) => eprintln!("{}", runtime_error(&format!("{err:#}"))),
            }
            ExitCode::from(e.code())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_is_said_once() {
        assert_eq!(
            super::runtime_error("error communicating with database: refused"),
            "throng: error communicating with database: refused"
        );
        assert_eq!(
            super::runtime_error("the samples writer failed"),
            "throng: error: the samples writer failed"
        );
    }
}
